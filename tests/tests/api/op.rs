//! A real, certified OpenID Provider for the sign-in tests: npm
//! `oidc-provider` (tests/oidc/op.mjs) run with node, on its own port, until
//! dropped. `./dev test` installs it.

use std::process::{Child, Command};

use serde_json::Value;

use crate::helpers::{Says, spawn_until_ready};

/// The provider, running as a node process until dropped.
pub struct Op {
    child: Child,
    pub issuer: String,
}

impl Op {
    /// Starts the provider; its one client signs ID tokens with `alg`. A
    /// node that has not said it is ready within 20 s is killed and started
    /// again (seen once: node stuck on a lock before listening).
    pub fn start(alg: &str, client_id: &str, client_secret: &str) -> Op {
        for _ in 0..3 {
            if let Some(op) = Self::try_start(alg, client_id, client_secret) {
                return op;
            }
        }
        panic!("the test OpenID Provider did not start three times");
    }

    /// One provider for every test of this process that needs only a
    /// provider signing with RS256 for this one client (the Caddie tests:
    /// each signs in as its own users, with its own cookies, at its own
    /// callback, which it registers). Started once: node and
    /// oidc-provider's start took ~0.7 s of CPU, and the Caddie tests
    /// started ~50 a run (issue #47: the test run). A static is never
    /// dropped, so the provider ends with this process instead
    /// (tests/exit-with-parent.cjs). Tests that rotate keys or sign otherwise
    /// start their own ([`Op::start`]).
    pub fn shared(client_id: &str, client_secret: &str) -> &'static Op {
        static SHARED: std::sync::OnceLock<(String, String, Op)> = std::sync::OnceLock::new();
        let (id, secret, op) = SHARED.get_or_init(|| {
            let op = (0..3)
                .find_map(|_| Self::try_start_with("RS256", client_id, client_secret, Some(std::process::id())))
                .expect("the test OpenID Provider did not start three times");
            (client_id.to_owned(), client_secret.to_owned(), op)
        });
        assert_eq!((id.as_str(), secret.as_str()), (client_id, client_secret), "one client for the shared provider");
        op
    }

    fn try_start(alg: &str, client_id: &str, client_secret: &str) -> Option<Op> {
        Self::try_start_with(alg, client_id, client_secret, None)
    }

    fn try_start_with(alg: &str, client_id: &str, client_secret: &str, parent: Option<u32>) -> Option<Op> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/oidc");
        assert!(
            std::path::Path::new(&format!("{dir}/node_modules/oidc-provider")).exists(),
            "the test OpenID Provider is not installed: run ./dev test (npm ci in tests/oidc)"
        );
        let mut command = Command::new("node");
        if let Some(parent) = parent {
            command.arg("--require").arg(crate::helpers::EXIT_WITH_PARENT).env("EXIT_WITH_PARENT", parent.to_string());
        }
        command
            .arg(format!("{dir}/op.mjs"))
            .env("OP_PORT", "0")
            .env("OP_CLIENT_ID", client_id)
            .env("OP_CLIENT_SECRET", client_secret)
            .env("OP_ID_TOKEN_ALG", alg)
            .env("OP_AUTO_GRANT", "1");
        let ready = |line: &str| line.strip_prefix("OIDC_OP_READY ").map(str::to_owned);
        let (child, state) = spawn_until_ready(command, Says::Stdout, ready, std::time::Duration::from_secs(20))?;
        let state: Value = serde_json::from_str(&state).unwrap();
        Some(Op { child, issuer: state["issuer"].as_str().unwrap().to_owned() })
    }

    /// Allows the relying party's redirect URI (known once it runs), beside
    /// those allowed before (a shared provider serves many).
    pub async fn allow_redirect(&self, uri: &str) {
        let uri: String = url::form_urlencoded::byte_serialize(uri.as_bytes()).collect();
        self.test_api(&format!("/__test/redirect_uris?uri={uri}&add=1")).await;
    }

    /// Calls the provider's test API (`/__test/rotate`, …).
    pub async fn test_api(&self, path: &str) -> Value {
        let response = crate::helpers::http().post(format!("{}{path}", self.issuer)).send().await.unwrap();
        assert!(response.status().is_success(), "{path}");
        response.json().await.unwrap()
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
