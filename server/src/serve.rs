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
//! Otherwise it does what `axum::serve` did: no timer (an idle keep-alive
//! connection stays open until its client closes it, so a proxy that keeps
//! upstream connections never sends a request down one this server has
//! just closed), the peer's address for `ConnectInfo`, and a graceful end.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Serves `router` on `listener` until `stop` is cancelled; then accepts
/// no new connection, asks each open one to close after its request in
/// flight, and returns once all have closed. Handlers see the peer's
/// address as `ConnectInfo<SocketAddr>`, as with
/// `into_make_service_with_connect_info`.
pub async fn http1<L>(mut listener: L, router: Router, stop: CancellationToken)
where
    L: Listener<Addr = SocketAddr>,
{
    let builder = hyper::server::conn::http1::Builder::new();
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
