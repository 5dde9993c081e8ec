//! One way to take a lock, for this crate and the workspace's hosts (through `__private`).
//!
//! Every mutex it is used on guards plain data (slots, maps, counters) that stays consistent
//! when a thread panics while holding it, and a plugin's panic must never take its host down
//! with it; so a poisoned lock is taken as it is instead of propagating the panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Lock `mutex`, recovering from poisoning.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
