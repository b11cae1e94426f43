//! (in progress)

use axum::Router;

use super::AppState;

/// The routes of this resource.
pub(super) fn routes() -> Router<AppState> {
    Router::new()
}
