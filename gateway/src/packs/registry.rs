//! The packs registered at startup: the roots named by `TOLLGATE_PACK_ROOTS` (separated by the
//! platform's path separator, `:` on Unix), each loaded and validated once. Only a registered
//! pack's cases can be run from the API and the browser; a root that does not validate is not
//! registered, and its faults are kept to be shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::{Pack, PackFault, load, validate};

/// The variable naming the roots.
pub const PACK_ROOTS_VAR: &str = "TOLLGATE_PACK_ROOTS";

/// A root that could not be registered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unregistered {
    /// The root.
    pub root: String,
    /// Why.
    pub faults: Vec<PackFault>,
    /// The root of the pack already registered under the same engine, when that is why (the
    /// pack itself is valid: `packs validate` passes on it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clashes_with: Option<String>,
}

/// The registered packs, by `ENGINE_ID@ENGINE_VERSION`.
#[derive(Debug, Clone, Default)]
pub struct PackRegistry {
    packs: BTreeMap<String, Arc<Pack>>,
    unregistered: Vec<Unregistered>,
}

impl PackRegistry {
    /// The packs named by `TOLLGATE_PACK_ROOTS` in `env`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> PackRegistry {
        let roots: Vec<PathBuf> = env(PACK_ROOTS_VAR)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        PackRegistry::from_roots(&roots)
    }

    /// The packs at `roots`.
    pub fn from_roots(roots: &[PathBuf]) -> PackRegistry {
        let mut registry = PackRegistry::default();
        for root in roots {
            registry.register(root);
        }
        registry
    }

    /// Loads, validates and registers the pack at `root` (or notes why it cannot be).
    pub fn register(&mut self, root: &Path) {
        let shown = root.display().to_string();
        let pack = match load(root) {
            Ok(p) => p,
            Err(f) => {
                self.unregistered.push(Unregistered {
                    root: shown,
                    faults: f.0,
                    clashes_with: None,
                });
                return;
            }
        };
        let (faults, _) = validate::check(&pack);
        if !faults.is_empty() {
            self.unregistered.push(Unregistered {
                root: shown,
                faults,
                clashes_with: None,
            });
            return;
        }
        let engine = pack.engine();
        if let Some(existing) = self.packs.get(&engine) {
            self.unregistered.push(Unregistered {
                root: shown,
                faults: vec![PackFault::file(
                    "pack.yaml",
                    format!(
                        "engine `{engine}` is already registered from `{}`",
                        existing.root.display()
                    ),
                    "give this pack another engine_id or engine_version",
                )],
                clashes_with: Some(existing.root.display().to_string()),
            });
            return;
        }
        self.packs.insert(engine, Arc::new(pack));
    }

    /// The pack registered as `engine_id@engine_version`.
    pub fn get(&self, engine_id: &str, engine_version: &str) -> Option<Arc<Pack>> {
        self.packs
            .get(&format!("{engine_id}@{engine_version}"))
            .cloned()
    }

    /// Every registered pack, by engine.
    pub fn packs(&self) -> impl Iterator<Item = &Arc<Pack>> {
        self.packs.values()
    }

    /// The roots that could not be registered.
    pub fn unregistered(&self) -> &[Unregistered] {
        &self.unregistered
    }

    /// A registry holding one pack (the CLI acting on a pack root it was given).
    pub fn single(pack: Pack) -> PackRegistry {
        let mut packs = BTreeMap::new();
        packs.insert(pack.engine(), Arc::new(pack));
        PackRegistry {
            packs,
            unregistered: Vec::new(),
        }
    }
}
