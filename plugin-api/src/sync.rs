//! One way to take a lock, for this crate and the workspace's hosts (through `__private`):
//! a mutex, a read-write lock, or the value behind either when it is borrowed exclusively.
//!
//! Every mutex it is used on guards plain data (slots, maps, counters) that stays consistent
//! when a thread panics while holding it, and a plugin's panic must never take its host down
//! with it; so a poisoned lock is taken as it is instead of propagating the panic.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Lock `mutex`, recovering from poisoning.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Take `lock` for reading, recovering from poisoning.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Take `lock` for writing, recovering from poisoning.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// The value behind `lock`, borrowed exclusively (no locking), recovering from poisoning.
pub fn rw_get_mut<T: ?Sized>(lock: &mut RwLock<T>) -> &mut T {
    lock.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// The value behind `mutex`, borrowed exclusively (no locking), recovering from poisoning.
pub fn mutex_get_mut<T: ?Sized>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(PoisonError::into_inner)
}
