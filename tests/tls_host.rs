//! A tool host over TLS, for the server's calls over HTTP/2 (issue #47):
//! a CA and a certificate for 127.0.0.1 made here with OpenSSL, a listener
//! that offers `h2` (or only `http/1.1`) by ALPN, and axum serving both.
//! Used by the integration tests and `examples/streams.rs`.

#![allow(dead_code)] // each includer uses its own part of this

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{BasicConstraints, KeyUsage, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

/// A certificate authority of the test's own.
pub struct TestCa {
    certificate: X509,
    key: PKey<Private>,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        let mut subject = X509NameBuilder::new().unwrap();
        subject.append_entry_by_text("CN", name).unwrap();
        let subject = subject.build();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        builder.set_serial_number(&BigNum::from_u32(1).unwrap().to_asn1_integer().unwrap()).unwrap();
        builder.set_subject_name(&subject).unwrap();
        builder.set_issuer_name(&subject).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
        builder.append_extension(BasicConstraints::new().critical().ca().build().unwrap()).unwrap();
        builder.append_extension(KeyUsage::new().critical().key_cert_sign().crl_sign().build().unwrap()).unwrap();
        builder.sign(&key, MessageDigest::sha256()).unwrap();
        Self { certificate: builder.build(), key }
    }

    /// The CA's certificate, PEM (what `CA_TOOL_HOSTS_CA_FILE` holds).
    pub fn pem(&self) -> String {
        String::from_utf8(self.certificate.to_pem().unwrap()).unwrap()
    }

    /// A server certificate for the IP address 127.0.0.1, signed by this
    /// CA: its PEM and its key's PKCS#8 PEM.
    fn leaf(&self) -> (Vec<u8>, Vec<u8>) {
        let key = PKey::from_rsa(openssl::rsa::Rsa::generate(2048).unwrap()).unwrap();
        let mut subject = X509NameBuilder::new().unwrap();
        subject.append_entry_by_text("CN", "127.0.0.1").unwrap();
        let subject = subject.build();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        builder.set_serial_number(&BigNum::from_u32(2).unwrap().to_asn1_integer().unwrap()).unwrap();
        builder.set_subject_name(&subject).unwrap();
        builder.set_issuer_name(self.certificate.subject_name()).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(2).unwrap()).unwrap();
        let names = SubjectAlternativeName::new()
            .ip("127.0.0.1")
            .build(&builder.x509v3_context(Some(&self.certificate), None))
            .unwrap();
        builder.append_extension(names).unwrap();
        builder.sign(&self.key, MessageDigest::sha256()).unwrap();
        (builder.build().to_pem().unwrap(), key.private_key_to_pem_pkcs8().unwrap())
    }
}

/// How a TLS host speaks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Alpn {
    /// Offers HTTP/2 (and HTTP/1.1 to a client that asks only for it).
    H2,
    /// HTTP/1.1 only.
    Http1,
}

/// A TLS host serving `router` on 127.0.0.1 with a certificate from `ca`;
/// returns its address and how many connections it has taken.
pub async fn serve_tls(ca: &TestCa, alpn: Alpn, router: axum::Router) -> (SocketAddr, Arc<AtomicUsize>) {
    let (certificate, key) = ca.leaf();
    let identity = native_tls::Identity::from_pkcs8(&certificate, &key).unwrap();
    let mut acceptor = native_tls::TlsAcceptor::builder(identity);
    match alpn {
        Alpn::H2 => acceptor.accept_alpn(&["h2", "http/1.1"]),
        Alpn::Http1 => acceptor.accept_alpn(&["http/1.1"]),
    };
    let acceptor = tokio_native_tls::TlsAcceptor::from(acceptor.build().unwrap());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = tcp.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let listener = TlsListener { tcp, acceptor, accepted: accepted.clone() };
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (address, accepted)
}

struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_native_tls::TlsAcceptor,
    accepted: Arc<AtomicUsize>,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_native_tls::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, peer)) = self.tcp.accept().await else { continue };
            // As Node's, Python's and Go's servers do (common::serve).
            let _ = tcp.set_nodelay(true);
            // A handshake that fails (a client that does not trust the
            // CA) is that connection's end, not the listener's.
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                self.accepted.fetch_add(1, Ordering::SeqCst);
                return (tls, peer);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}
