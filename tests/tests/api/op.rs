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

    fn try_start(alg: &str, client_id: &str, client_secret: &str) -> Option<Op> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/oidc");
        assert!(
            std::path::Path::new(&format!("{dir}/node_modules/oidc-provider")).exists(),
            "the test OpenID Provider is not installed: run ./dev test (npm ci in tests/oidc)"
        );
        let mut command = Command::new("node");
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

    /// Registers the relying party's redirect URI (known once it runs).
    pub async fn allow_redirect(&self, uri: &str) {
        let uri: String = url::form_urlencoded::byte_serialize(uri.as_bytes()).collect();
        self.test_api(&format!("/__test/redirect_uris?uri={uri}")).await;
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
