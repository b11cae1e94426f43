//! The dashboard in a real browser: `tollgate serve` started as a user would, driven in headless
//! Chromium through ChromeDriver (Debian's `chromium` and `chromium-driver`, which `.ci/run`
//! installs) with fantoccini. Each test logs in as a person would, clicks through a screen and
//! asserts what the page shows; every screen is also checked for contrast, for fitting a
//! narrow window and for keyboard use, and photographed.
//!
//! Screenshots go to `TOLLGATE_SCREENSHOTS` (relative to the workspace root) when set, else to
//! the target directory. The README's pictures are refreshed with
//! `TOLLGATE_SCREENSHOTS=docs/screenshots cargo test -p tollgate --test dashboard_browser`.
//!
//! ChromeDriver is `TOLLGATE_TEST_CHROMEDRIVER`, else `chromedriver` on the PATH; Chromium is
//! `TOLLGATE_TEST_CHROMIUM`, else `/usr/bin/chromium`. Under `CI` a missing browser fails the
//! tests; elsewhere they say so and pass.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "dashboard_browser/driver.rs"]
mod driver;
#[path = "support/mod.rs"]
mod support;

#[path = "dashboard_browser/decisions.rs"]
mod decisions;
#[path = "dashboard_browser/records.rs"]
mod records;
#[path = "dashboard_browser/runs.rs"]
mod runs;
