//! The browser the dashboard tests drive: ChromeDriver and headless Chromium, one at a time,
//! and what every screen's test does with it (log in, open, click, wait, check and photograph).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::support::{Gateway, TempDir, root};
use fantoccini::actions::{InputSource as _, KeyAction, KeyActions};
use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use futures_util::FutureExt as _;
use serde_json::{Value, json};

/// One browser at a time: two Chromiums on two cores make every test slow and flaky.
pub(crate) static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A ChromeDriver on a free loopback port, killed when dropped.
pub(crate) struct Driver {
    child: Child,
    url: String,
    chromium: String,
    profile: TempDir,
}

impl Driver {
    /// Starts ChromeDriver, or says why not (`None` outside CI when it is not installed).
    fn start() -> Option<Driver> {
        let driver = std::env::var("TOLLGATE_TEST_CHROMEDRIVER")
            .unwrap_or_else(|_| "chromedriver".to_string());
        let chromium = std::env::var("TOLLGATE_TEST_CHROMIUM")
            .unwrap_or_else(|_| "/usr/bin/chromium".to_string());
        let installed = Command::new(&driver)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
            && std::path::Path::new(&chromium).exists();
        if !installed {
            assert!(
                std::env::var_os("CI").is_none(),
                "no ChromeDriver ({driver}) or Chromium ({chromium}): `.ci/run` installs them"
            );
            eprintln!(
                "skipped: no ChromeDriver or Chromium (apt-get install chromium chromium-driver, \
                 or set TOLLGATE_TEST_CHROMEDRIVER and TOLLGATE_TEST_CHROMIUM)"
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Driver {
            child,
            url,
            chromium,
            profile: TempDir::new("chromium-profile"),
        })
    }

    /// A new headless Chromium session at 1280 px wide.
    async fn browser(&self) -> Client {
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
        ];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", self.profile.path().display()));
        let caps = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": self.chromium, "args": args},
        });
        let Value::Object(caps) = caps else {
            unreachable!()
        };
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&self.url)
            .await
            .expect("a Chromium session")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs one browser test: a gateway serving the fixture envelopes, a ChromeDriver, and `body`
/// with a fresh browser, which is closed afterwards even when `body` fails.
pub(crate) fn with_browser<F>(body: F)
where
    F: AsyncFnOnce(&Gateway, &Client),
{
    with_browser_on(Gateway::with_fixture_envelopes, body);
}

/// Like [`with_browser`], with the gateway `start` starts.
pub(crate) fn with_browser_on<F>(start: impl FnOnce() -> Gateway, body: F)
where
    F: AsyncFnOnce(&Gateway, &Client),
{
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(driver) = Driver::start() else {
        return;
    };
    let gw = start();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let client = driver.browser().await;
            let result = std::panic::AssertUnwindSafe(body(&gw, &client))
                .catch_unwind()
                .await;
            let _ = client.close().await;
            if let Err(panic) = result {
                std::panic::resume_unwind(panic);
            }
        });
}

/// Opens a path of the gateway.
pub(crate) async fn open(gw: &Gateway, client: &Client, path: &str) {
    client.goto(&format!("{}{path}", gw.base)).await.unwrap();
}

/// Logs in with the one-time URL `serve` wrote, as a person pasting it would.
pub(crate) async fn log_in(gw: &Gateway, client: &Client) {
    client.goto(&gw.dashboard_url).await.unwrap();
    let url = client.current_url().await.unwrap();
    assert_eq!(url.path(), "/ui", "the login URL lands on the overview");
    assert!(
        url.query().is_none(),
        "the token does not stay in the address bar"
    );
}

/// Logs in on the login page with a person's own token (an approver's or an admin's), as
/// they would paste it; the session acts as them (issue 32).
pub(crate) async fn log_in_with(gw: &Gateway, client: &Client, token: &str) {
    open(gw, client, "/ui/login").await;
    let field = client
        .find(Locator::Css("input[name=token]"))
        .await
        .unwrap();
    field.send_keys(token).await.unwrap();
    click_to(client, Locator::Css("main form button[type=submit]"), "/ui").await;
}

/// The visible text of the page.
pub(crate) async fn text(client: &Client) -> String {
    client
        .find(Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The folder screenshots go to.
pub(crate) fn screenshot_dir() -> PathBuf {
    match std::env::var("TOLLGATE_SCREENSHOTS") {
        Ok(dir) if !dir.trim().is_empty() => root().join(dir),
        _ => PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots"),
    }
}

/// Photographs the page as `NAME.png`, after checking what every screen must hold: readable
/// contrast, no sideways scrolling at 1280 px, and nothing fetched from off the machine.
pub(crate) async fn screen(client: &Client, name: &str) {
    check_contrast(client, name).await;
    assert_fits(client, name).await;
    let external: Value = client
        .execute(
            "return performance.getEntriesByType('resource').map(e => e.name)
                 .filter(n => !n.startsWith(location.origin));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(
        external,
        json!([]),
        "{name} fetched from outside the gateway"
    );
    let png = client.screenshot().await.unwrap();
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    let dir = screenshot_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}

/// Every visible piece of text against its background has a contrast ratio of at least 4.5:1
/// (WCAG 2 AA), computed in the browser from the styles it applied.
pub(crate) async fn check_contrast(client: &Client, name: &str) {
    let failures: Value = client
        .execute(
            r#"
            const rgb = s => (s.match(/[\d.]+/g) || []).map(Number);
            const lum = ([r, g, b]) => {
              const c = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
              return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
            };
            const background = el => {
              for (let e = el; e; e = e.parentElement) {
                const c = rgb(getComputedStyle(e).backgroundColor);
                if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
              }
              return [255, 255, 255];
            };
            const out = [];
            for (const el of document.querySelectorAll('body *')) {
              const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
              const box = el.getBoundingClientRect();
              if (!own || box.width === 0 || box.right < 0 || box.left < 0) continue;
              const fg = lum(rgb(getComputedStyle(el).color));
              const bg = lum(background(el));
              const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
              if (ratio < 4.5) out.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
            }
            return out;
            "#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(failures, json!([]), "{name}: text below 4.5:1 contrast");
}

/// The page does not scroll sideways: wide tables scroll in their own box.
pub(crate) async fn assert_fits(client: &Client, name: &str) {
    let overflow: Value = client
        .execute(
            r#"
            const d = document.documentElement;
            const over = d.scrollWidth - d.clientWidth;
            if (over <= 0) return null;
            const wide = [...document.querySelectorAll('body *')]
              .filter(e => e.getBoundingClientRect().right > d.clientWidth + 1)
              .filter(e => !e.parentElement.closest('.scroll'))
              .slice(0, 5)
              .map(e => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().width)} px)`);
            return {over, wide};
            "#,
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(overflow, Value::Null, "{name} scrolls sideways");
}

/// Clicks `what` and waits until the browser has loaded `path` (a link followed, a form
/// posted and redirected).
pub(crate) async fn click_to(client: &Client, what: Locator<'_>, path: &str) {
    let element = client.find(what).await.unwrap();
    click_element_to(client, element, path).await;
}

/// Clicks an element found already and waits until the browser has loaded `path` as a new
/// document. The old document is marked before the click, so a form that posts and redirects
/// back to the same address is not mistaken for loaded while the old page still shows (a race
/// that failed `find("body")` mid-navigation under load).
pub(crate) async fn click_element_to(client: &Client, element: Element, path: &str) {
    client
        .execute("window.__tollgateBeforeClick = true;", vec![])
        .await
        .unwrap();
    element.click().await.unwrap();
    wait_for(client, &format!("{path} after a click"), async || {
        let url = client.current_url().await.unwrap();
        let fresh = client
            .execute("return window.__tollgateBeforeClick === undefined;", vec![])
            .await
            .is_ok_and(|v| v == Value::Bool(true));
        url.path() == path && fresh
    })
    .await;
}

/// Waits until `ready` holds and the document has loaded (10 s at most).
pub(crate) async fn wait_for(client: &Client, what: &str, mut ready: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    loop {
        let loaded = client
            .execute("return document.readyState;", vec![])
            .await
            .is_ok_and(|s| s == "complete");
        if loaded && ready().await {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "waited 10 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The decisions of a fixture run counted by effect, as the runs list shows them (`365 allow
/// · 22 redact · ...`), read from the run file itself: each decision by what the gateway
/// answered, and each compiled item's policy decision.
pub(crate) async fn press_tab(client: &Client) {
    let tab = char::from(Key::Tab);
    client
        .perform_actions(
            KeyActions::new("keyboard".into())
                .then(KeyAction::Down { value: tab })
                .then(KeyAction::Up { value: tab }),
        )
        .await
        .unwrap();
}
