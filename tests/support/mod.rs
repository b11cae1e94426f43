//! What the end-to-end tests share: the workspace root and running the `tollgate` binary.
// Each test binary uses part of this module.
#![allow(dead_code)]

pub mod dashboard;
pub mod mcp;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tollgate_gateway::store::{Store, StoreLocation};

/// The workspace root (tests run the binary from there, as a user would).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Runs `tollgate ARGS...` from the workspace root.
pub fn tollgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("run tollgate")
}

/// The command's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `tollgate ARGS...` from the workspace root with extra environment variables.
pub fn tollgate_env(envs: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .current_dir(root())
        .envs(envs.iter().copied())
        .args(args)
        .output()
        .expect("run tollgate")
}

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh, empty directory whose name includes `tag`.
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "tollgate-e2e-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The URL of a store of its own: the `sqlite:` URL of a database file inside it, or on
    /// PostgreSQL (`TOLLGATE_TEST_ENGINE=postgres`) a schema of its own (see [`postgres_url`]).
    pub fn database_url(&self) -> String {
        postgres_url(&self.0)
            .unwrap_or_else(|| format!("sqlite:{}", self.0.join("tollgate.db").display()))
    }
}

/// Whether the end-to-end tests run the store on PostgreSQL: `TOLLGATE_TEST_ENGINE=postgres`,
/// with a server at `TOLLGATE_TEST_POSTGRES_URL` (`scripts/pg-throwaway start DIR` makes one).
/// Otherwise (unset, or `sqlite`) every store is SQLite, the default.
pub fn on_postgres() -> bool {
    match std::env::var("TOLLGATE_TEST_ENGINE").as_deref() {
        Ok("postgres") => true,
        Ok("sqlite") | Err(_) => false,
        Ok(other) => panic!("TOLLGATE_TEST_ENGINE is `{other}`: use `sqlite` or `postgres`"),
    }
}

/// The file in a working directory naming its PostgreSQL schema.
const POSTGRES_NAMED: &str = ".tollgate-test-postgres-url";

/// The store of `tollgate` commands and gateways run in `dir`: `None` on SQLite (the default
/// file, `.tollgate/tollgate.db` under `dir`); on PostgreSQL the URL of a schema of its own in
/// the test server, made on first use and named in a file in `dir`, so every command and
/// gateway in `dir`, and a restart, finds the same data, as they would the same file.
pub fn postgres_url(dir: &Path) -> Option<String> {
    if !on_postgres() {
        return None;
    }
    let named = dir.join(POSTGRES_NAMED);
    if let Ok(url) = std::fs::read_to_string(&named) {
        return Some(url);
    }
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let server = std::env::var("TOLLGATE_TEST_POSTGRES_URL").expect(
        "TOLLGATE_TEST_ENGINE=postgres needs TOLLGATE_TEST_POSTGRES_URL (scripts/pg-throwaway start DIR)",
    );
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!(
        "e2e_{}_{}_{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let admin = Store::open_unmigrated(&StoreLocation::postgres(server.clone()))
        .expect("connect to the test server");
    let create = format!("CREATE SCHEMA {schema}");
    admin
        .write(move |c| c.execute_batch(&create))
        .expect("create a test schema");
    let sep = if server.contains('?') { '&' } else { '?' };
    let url = format!("{server}{sep}options=-c%20search_path%3D{schema}");
    std::fs::write(&named, &url).expect("name the test schema");
    Some(url)
}

/// Points a `tollgate` command run in `dir` at the store of `dir` (see [`postgres_url`]),
/// whatever `TOLLGATE_DATABASE_URL` the test process has.
pub fn with_store<'c>(cmd: &'c mut Command, dir: &Path) -> &'c mut Command {
    match postgres_url(dir) {
        Some(url) => cmd.env("TOLLGATE_DATABASE_URL", url),
        None => cmd.env_remove("TOLLGATE_DATABASE_URL"),
    }
}

/// The store of `tollgate` commands run in `dir`, opened as it is (not migrated), on either
/// engine: for what a test reads or changes underneath the gateway (a count, a dropped table, a
/// tampered row), as an operator with the database's rights could.
pub fn store_in(dir: &Path) -> Store {
    let location = match postgres_url(dir) {
        Some(url) => StoreLocation::postgres(url),
        None => StoreLocation::file(dir.join(".tollgate/tollgate.db")),
    };
    Store::open_unmigrated(&location).expect("open the store")
}

/// The store at `url` (a `TOLLGATE_DATABASE_URL`, as [`TempDir::database_url`] gives), opened
/// as it is, on either engine.
pub fn store_at(url: &str) -> Store {
    let url = url.to_string();
    let location = StoreLocation::from_env(&|_| Some(url.clone()), &root()).expect("a store URL");
    Store::open_unmigrated(&location).expect("open the store")
}

/// The hash of every stored event of the store in `dir`, by (run, seq): what crash tests
/// compare the receipts clients were answered with against.
pub fn stored_hashes(dir: &Path) -> std::collections::HashMap<(String, u64), String> {
    store_in(dir)
        .read(|c| {
            c.prepare("SELECT run_id, seq, hash FROM events")?
                .query_map((), |r| {
                    Ok(((r.get::<String>(0)?, r.get::<i64>(1)? as u64), r.get(2)?))
                })?
                .collect()
        })
        .expect("read the stored events")
}

/// `SELECT COUNT(*) FROM table` in `store`.
pub fn count_rows(store: &Store, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    store
        .read(move |c| c.query_row(&sql, (), |r| r.get::<i64>(0)))
        .expect("count rows")
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `tollgate serve` on a free loopback port with its own database, stopped (killed)
/// when dropped.
pub struct Gateway {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The bearer token.
    pub token: String,
    /// The gateway's working directory (holds `.tollgate/`).
    pub dir: TempDir,
    /// The dashboard URL with the one-time login token, from the file `serve` named.
    pub dashboard_url: String,
    /// Everything `serve` wrote to stderr so far (what a log of it would hold).
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
    /// The environment variables and `serve` arguments it was started with.
    started: (Vec<(String, String)>, Vec<String>),
}

/// Owned copies of environment variables and arguments.
fn owned(envs: &[(&str, &str)], args: &[&str]) -> (Vec<(String, String)>, Vec<String>) {
    (
        envs.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        args.iter().map(|a| a.to_string()).collect(),
    )
}

/// `n` gateways on one store (see [`Gateway::beside`]), the first made fresh, each started with
/// these environment variables and `serve` arguments.
pub fn cluster(n: usize, envs: &[(&str, &str)], args: &[&str]) -> Vec<Gateway> {
    let first = Gateway::start_args(envs, args);
    let mut all: Vec<Gateway> = (1..n).map(|_| first.beside(envs, args)).collect();
    all.insert(0, first);
    all
}

impl Gateway {
    /// Starts a gateway with extra environment variables.
    pub fn start_with(envs: &[(&str, &str)]) -> Gateway {
        Gateway::start_args(envs, &[])
    }

    /// Starts a gateway serving the sample envelopes of `fixtures/envelopes`.
    pub fn with_fixture_envelopes() -> Gateway {
        let envelopes = root().join("fixtures/envelopes");
        Gateway::start_args(
            &[],
            &["--envelopes", envelopes.to_str().expect("utf-8 path")],
        )
    }

    /// Starts a gateway with extra environment variables and `serve` arguments.
    pub fn start_args(envs: &[(&str, &str)], args: &[&str]) -> Gateway {
        Gateway::start_in(TempDir::new("gateway"), envs, args)
    }

    /// Starts a gateway in `dir`, on the store already there (made by `tollgate` commands run
    /// in it), with extra environment variables and `serve` arguments.
    pub fn start_in(dir: TempDir, envs: &[(&str, &str)], args: &[&str]) -> Gateway {
        let token = "test-token-0123456789".to_string();
        let (child, base, dashboard_url, log) = spawn_serve(dir.path(), &token, envs, args);
        Gateway {
            child,
            base,
            token,
            dir,
            dashboard_url,
            log,
            started: owned(envs, args),
        }
    }

    /// Starts another gateway on this one's store (several gateways on one database, issue
    /// 38), in a working directory of its own, with these environment variables and `serve`
    /// arguments. On SQLite it opens the same file (`TOLLGATE_DATABASE_URL`); on PostgreSQL
    /// the same schema. Run `tollgate` commands through the first gateway.
    pub fn beside(&self, envs: &[(&str, &str)], args: &[&str]) -> Gateway {
        let dir = TempDir::new("gateway");
        let file = format!(
            "sqlite:{}",
            self.dir.path().join(".tollgate/tollgate.db").display()
        );
        let mut all: Vec<(&str, &str)> = Vec::new();
        match postgres_url(self.dir.path()) {
            Some(url) => std::fs::write(dir.path().join(POSTGRES_NAMED), url)
                .expect("name the shared test schema"),
            None => all.push(("TOLLGATE_DATABASE_URL", &file)),
        }
        all.extend_from_slice(envs);
        let (child, base, dashboard_url, log) = spawn_serve(dir.path(), &self.token, &all, args);
        Gateway {
            child,
            base,
            token: self.token.clone(),
            dir,
            dashboard_url,
            log,
            started: owned(&all, args),
        }
    }

    /// Kills the gateway with SIGKILL (no shutdown of any kind) and waits for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the gateway again in the same directory (so on the same store), with these
    /// environment variables and `serve` arguments; the old process must be gone.
    pub fn restart(&mut self, envs: &[(&str, &str)], args: &[&str]) {
        let (child, base, dashboard_url, log) =
            spawn_serve(self.dir.path(), &self.token, envs, args);
        self.child = child;
        self.base = base;
        self.dashboard_url = dashboard_url;
        self.log = log;
        self.started = owned(envs, args);
    }

    /// Starts the gateway again as it was started (same store, variables and arguments; a
    /// new port); the old process must be gone.
    pub fn restart_as_started(&mut self) {
        let (envs, args) = self.started.clone();
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.restart(&envs, &args);
    }

    /// Starts a gateway.
    pub fn start() -> Gateway {
        Gateway::start_with(&[])
    }

    /// Sends a request with the token; returns the status and the body as JSON (or as a JSON
    /// string when it is not JSON).
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        self.call_as(&self.token, method, path, body)
    }

    /// Sends a request with exactly these headers.
    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        headers: &[(&str, &str)],
    ) -> (u16, serde_json::Value) {
        let raw = self.raw(method, path, body.map(|b| b.to_string()), headers);
        let json = serde_json::from_str(&raw.1).unwrap_or(serde_json::Value::String(raw.1));
        (raw.0, json)
    }

    /// Sends a request with a raw body; returns the status and the body text.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<String>,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let url = format!("{}{path}", self.base);
        let mut req = ureq::http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let has_body = body.is_some();
        if has_body
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            req = req.header("Content-Type", "application/json");
        }
        let req = req.body(body.unwrap_or_default()).expect("build request");
        let mut resp = agent.run(req).expect("send request");
        let status = resp.status().as_u16();
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        (status, text)
    }
}

/// Starts `tollgate serve` on a free port in `dir`; returns the child, its base URL, the
/// dashboard URL and its log so far.
#[allow(clippy::type_complexity)]
fn spawn_serve(
    dir: &Path,
    token: &str,
    envs: &[(&str, &str)],
    args: &[&str],
) -> (
    std::process::Child,
    String,
    String,
    std::sync::Arc<std::sync::Mutex<String>>,
) {
    use std::io::BufRead as _;
    let mut child = with_store(&mut Command::new(env!("CARGO_BIN_EXE_tollgate")), dir)
        .current_dir(dir)
        .env("TOLLGATE_TOKEN", token)
        .envs(envs.iter().copied())
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tollgate serve");
    // stderr is a pipe, as a log is: `serve` names the file holding the dashboard URL
    // rather than printing it. Everything it says is kept (tests check what a log would
    // hold) and echoed to the test's output.
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut dashboard_url = String::new();
    let mut said = String::new();
    while stderr
        .read_line(&mut said)
        .expect("read the terminal output")
        > 0
    {
        eprint!("{said}");
        log.lock().unwrap().push_str(&said);
        if let Some(rest) = said
            .trim()
            .strip_prefix("tollgate: dashboard login URL in ")
        {
            let file = rest.split(" (").next().unwrap_or(rest);
            dashboard_url = std::fs::read_to_string(dir.join(file))
                .expect("read the dashboard URL file")
                .trim()
                .to_string();
            break;
        }
        said.clear();
    }
    let kept = log.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while stderr.read_line(&mut line).unwrap_or(0) > 0 {
            eprint!("{line}");
            kept.lock().unwrap().push_str(&line);
            line.clear();
        }
    });
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the listening line");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    (child, base, dashboard_url, log)
}

impl Gateway {
    /// Runs `tollgate ARGS...` in the gateway's directory (so it uses the same store).
    pub fn tollgate(&self, args: &[&str]) -> Output {
        with_store(
            &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
            self.dir.path(),
        )
        .current_dir(self.dir.path())
        .args(args)
        .output()
        .expect("run tollgate")
    }

    /// Imports fixture runs (`fixtures/runs/NAME`) into the gateway's store; it must succeed.
    pub fn import_fixture_runs(&self, files: &[&str]) {
        let paths: Vec<String> = files
            .iter()
            .map(|f| root().join("fixtures/runs").join(f).display().to_string())
            .collect();
        let mut args = vec!["runs", "import"];
        args.extend(paths.iter().map(String::as_str));
        let out = self.tollgate(&args);
        assert!(out.status.success(), "{}", stderr(&out));
    }

    /// Creates a token on the gateway's store (`tollgate tokens create ARGS --json`), as an
    /// admin on its machine would; returns its text.
    pub fn create_token(&self, args: &[&str]) -> String {
        let mut all = vec!["tokens", "create", "--json"];
        all.extend_from_slice(args);
        let out = self.tollgate(&all);
        assert!(out.status.success(), "{}", stderr(&out));
        let made: serde_json::Value =
            serde_json::from_str(&stdout(&out)).expect("tokens create --json");
        made["token"].as_str().expect("a token").to_string()
    }

    /// Sends a request with another bearer token.
    pub fn call_as(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, serde_json::Value) {
        self.call_with(
            method,
            path,
            body,
            &[("Authorization", &format!("Bearer {token}"))],
        )
    }

    /// Rows of `table` in the gateway's database.
    pub fn count(&self, table: &str) -> i64 {
        count_rows(&store_in(self.dir.path()), table)
    }

    /// Stops the gateway with SIGTERM and waits; returns whether it exited cleanly. Its
    /// directory stays until the `Gateway` is dropped.
    pub fn terminate(&mut self) -> bool {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Random choices a crash test replays from a seed: `TOLLGATE_CRASH_SEED` when set, else the
/// clock (the test prints the seed so that a failure can be replayed). splitmix64.
pub struct Seeded {
    /// The seed the choices come from.
    pub seed: u64,
    state: u64,
}

impl Seeded {
    pub fn from_env() -> Seeded {
        let seed = std::env::var("TOLLGATE_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("a clock after 1970")
                    .as_nanos() as u64
            });
        Seeded { seed, state: seed }
    }

    pub fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

/// The Python that can import `module`: `TOLLGATE_TEST_PYTHON`, else `.ci/venv/bin/python`
/// (`.ci/run` installs the tests' packages there); `None` after saying the test is skipped.
pub fn python_with(module: &str) -> Option<String> {
    let candidates = [
        std::env::var("TOLLGATE_TEST_PYTHON").ok(),
        Some(root().join(".ci/venv/bin/python").display().to_string()),
    ];
    let found = candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if found.is_none() {
        eprintln!(
            "skipped: no Python that imports `{module}` (run .ci/run, or set TOLLGATE_TEST_PYTHON)"
        );
    }
    found
}

/// The token key several gateways of one cluster share (tokens made through one verify on all).
#[allow(dead_code)]
pub const CLUSTER_TOKEN_KEY: &str =
    "6b6579206f662074686520636c75737465722074657374732c20333220627974";

/// A token for the approver `team-lead` (the fixture envelopes' approver), made on `gw`'s store
/// under [`CLUSTER_TOKEN_KEY`].
#[allow(dead_code)]
pub fn team_lead(gw: &Gateway) -> String {
    let out = with_store(
        &mut Command::new(env!("CARGO_BIN_EXE_tollgate")),
        gw.dir.path(),
    )
    .current_dir(gw.dir.path())
    .env("TOLLGATE_TOKEN_KEY", CLUSTER_TOKEN_KEY)
    .args([
        "tokens",
        "create",
        "--json",
        "--kind",
        "approver",
        "--name",
        "team-lead",
    ])
    .output()
    .expect("run tollgate");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let made: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("JSON");
    made["token"].as_str().expect("a token").to_string()
}
