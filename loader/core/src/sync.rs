//! One way to take a lock in this crate.
//!
//! Every mutex here guards plain data (maps, stacks, slots) that stays consistent when a thread
//! panics while holding it, and a plugin's panic must never take a session down with it; so a
//! poisoned lock is taken as it is instead of propagating the panic.

use std::sync::{Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Lock `mutex`, recovering from poisoning: the plugin API's, one routine for the workspace.
pub(crate) use xcsh_plugin_api::__private::lock;

/// Take `lock` for reading, recovering from poisoning.
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// The value behind `lock`, borrowed exclusively (no locking), recovering from poisoning.
pub(crate) fn rw_get_mut<T: ?Sized>(lock: &mut RwLock<T>) -> &mut T {
    lock.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// The value behind `mutex`, borrowed exclusively (no locking), recovering from poisoning.
pub(crate) fn mutex_get_mut<T: ?Sized>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// Take `lock` for writing, recovering from poisoning.
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
