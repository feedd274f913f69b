//! The HTTP/1 accept loop every listener of the server runs.
//!
//! Written out rather than `axum::serve`, for a stream's memory (issue
//! #47): `axum::serve` hands each connection to hyper_util's "auto"
//! builder, which first reads up to 24 bytes to tell HTTP/2 from HTTP/1
//! and then gives them to HTTP/1 as a read of their own. hyper's read
//! buffer (8 KiB) then holds a partial request head, and reading the rest
//! doubles it to 16 KiB for as long as the connection lives (heaptrack:
//! 16.4 KB of every waiting stream). This server speaks HTTP/1 only
//! (axum's `http2` feature is off), so it serves HTTP/1 directly.
//! Otherwise it does what `axum::serve` did — the peer's address for
//! `ConnectInfo`, and a graceful end — and one thing it did not: a
//! connection that sends no request head for `CA_IDLE_CONNECTION_SECS`
//! is closed (hyper's header-read timeout, which runs from the
//! connection's opening and again from the end of each answer, never while
//! one streams), so connections that never ask for anything (slowloris)
//! or sit idle after their answer do not hold the node's sockets forever.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Serves `router` on `listener` until `stop` is cancelled; then accepts
/// no new connection, asks each open one to close after its request in
/// flight, and returns once all have closed. Handlers see the peer's
/// address as `ConnectInfo<SocketAddr>`, as with
/// `into_make_service_with_connect_info`. A connection that sends no
/// complete request head within `idle` of its opening or of its last
/// answer's end is closed (`None`: never).
pub async fn http1<L>(mut listener: L, router: Router, idle: Option<Duration>, stop: CancellationToken)
where
    L: Listener<Addr = SocketAddr>,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(idle);
    // Every connection's task holds a receiver: all have ended when the
    // sender sees none left.
    let (open, _) = tokio::sync::watch::channel(());
    loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let connection = builder.serve_connection(TokioIo::new(io), service);
        let (stop, open) = (stop.clone(), open.subscribe());
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = served {
                tracing::trace!(%error, "a connection ended with an error");
            }
            drop(open);
        });
    }
    drop(listener);
    open.closed().await;
}
