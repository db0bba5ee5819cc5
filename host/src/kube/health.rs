//! The HTTP endpoints: `/healthz` (the process serves), `/readyz` (every
//! cache has synced), `/metrics` (Prometheus text format).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus_client::registry::Registry;

/// What the endpoints report.
pub struct HealthState {
    /// Set once every cache has synced.
    pub ready: AtomicBool,
    /// The metrics.
    pub registry: Registry,
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<Arc<HealthState>>) -> impl IntoResponse {
    if state.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}

async fn metrics(State(state): State<Arc<HealthState>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        super::metrics::encode(&state.registry),
    )
}

/// The router of the three endpoints.
pub fn router(state: Arc<HealthState>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}

/// Serves the endpoints on a bound listener until `shutdown` resolves.
pub async fn serve_listener(
    listener: tokio::net::TcpListener,
    state: Arc<HealthState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}
