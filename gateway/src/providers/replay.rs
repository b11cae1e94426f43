//! The replay provider: recorded responses served by request hash.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::{ChatRequest, ChatResponse, Provider, ProviderError};

/// Serves recorded responses, looked up by [`ChatRequest::hash`].
///
/// Built from `(request hash, response)` pairs in recording order. When one request was
/// recorded several times (an agent asking the same thing twice and getting different
/// answers), the recordings are served in recording order, and the last one again once all
/// have been served. A request whose hash matches no recording is
/// [`ProviderError::ReplayMiss`]: replay never falls back to a live call.
///
/// The provider remembers what it served, so a replay can report recordings that were never
/// asked for ([`ReplayProvider::unused`]).
#[derive(Debug)]
pub struct ReplayProvider {
    /// Per request hash, the indices (into recording order) of its recordings.
    by_hash: BTreeMap<String, Vec<usize>>,
    /// Every recording, in recording order.
    recordings: Vec<(String, ChatResponse)>,
    state: Mutex<ServeLog>,
}

#[derive(Debug, Default)]
struct ServeLog {
    /// Hashes served, one per successful call, in call order.
    served: Vec<String>,
    /// Per recording (recording order), whether it has been served.
    used: Vec<bool>,
    /// Per request hash, how many of its recordings have been served.
    next: BTreeMap<String, usize>,
}

impl ReplayProvider {
    /// A provider over recorded `(request hash, response)` pairs, in recording order.
    pub fn new(recordings: impl IntoIterator<Item = (String, ChatResponse)>) -> Self {
        let recordings: Vec<(String, ChatResponse)> = recordings.into_iter().collect();
        let mut by_hash: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (index, (hash, _)) in recordings.iter().enumerate() {
            by_hash.entry(hash.clone()).or_default().push(index);
        }
        let state = Mutex::new(ServeLog {
            used: vec![false; recordings.len()],
            ..ServeLog::default()
        });
        ReplayProvider {
            by_hash,
            recordings,
            state,
        }
    }

    /// How many recordings the provider holds.
    pub fn len(&self) -> usize {
        self.recordings.len()
    }

    /// Whether the provider holds no recordings.
    pub fn is_empty(&self) -> bool {
        self.recordings.is_empty()
    }

    /// The request hashes served so far, one per successful call, in call order.
    pub fn served(&self) -> Vec<String> {
        self.log().served.clone()
    }

    /// The request hashes of recordings never served, in recording order (a hash recorded
    /// twice and asked once appears once).
    pub fn unused(&self) -> Vec<String> {
        let log = self.log();
        self.recordings
            .iter()
            .zip(&log.used)
            .filter(|(_, used)| !**used)
            .map(|((hash, _), _)| hash.clone())
            .collect()
    }

    fn log(&self) -> std::sync::MutexGuard<'_, ServeLog> {
        // The log is only appended to; a panic elsewhere while holding it cannot leave it
        // inconsistent, so a poisoned lock is still good to read.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &str {
        "replay"
    }

    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ProviderError> {
        let hash = request.hash();
        let miss = || ProviderError::ReplayMiss {
            hash: hash.clone(),
            model: request.model.clone(),
        };
        let indices = self.by_hash.get(&hash).ok_or_else(miss)?;
        let mut log = self.log();
        let turn = log.next.entry(hash.clone()).or_insert(0);
        let index = indices
            .get(*turn)
            .or_else(|| indices.last())
            .copied()
            .ok_or_else(miss)?;
        *turn = turn.saturating_add(1);
        if let Some(used) = log.used.get_mut(index) {
            *used = true;
        }
        log.served.push(hash.clone());
        let (_, response) = self.recordings.get(index).ok_or_else(miss)?;
        Ok(response.clone())
    }
}
