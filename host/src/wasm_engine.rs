//! What the component's engine and the Go js/wasm runtime's engine share:
//! wasmtime's on-disk code cache, and the thread that ticks an engine's
//! epoch for its deadlines.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Cache, CacheConfig, Config, Engine};

use crate::component::CodeCache;

/// Sets `config` to keep compiled code in `cache`. Without a usable cache
/// directory, code is compiled at every start-up, which is slower but
/// works: `what` (the component, wasm functions) says so in the log.
pub(crate) fn use_code_cache(config: &mut Config, cache: &CodeCache, what: &str) {
    let cache_config = match cache {
        CodeCache::Disabled => return,
        CodeCache::UserDefault => CacheConfig::new(),
        CodeCache::Directory(dir) => {
            let mut c = CacheConfig::new();
            c.with_directory(dir);
            c
        }
    };
    match Cache::new(cache_config) {
        Ok(cache) => {
            config.cache(Some(cache));
        }
        Err(e) => {
            tracing::warn!(error = %e, "no code cache: {what} compiled at every start-up")
        }
    }
}

/// Increments an engine's epoch every `tick` until dropped.
pub(crate) struct EpochTicker {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts the thread (named `name`).
    pub(crate) fn start(engine: &Engine, tick: Duration, name: &str) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let engine = engine.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
