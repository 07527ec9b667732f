//! A memory budget shared by many requests (issue 44): each request's own
//! limit bounds what one request takes, and a [`MemoryPool`] bounds what
//! all of them take together. A request reserves what it is about to hold
//! (the largest sort, group or join table it has built so far, a request
//! body) and gives it back when it ends; a reservation the pool cannot
//! grant fails that request with a clear error, and the server goes on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes shared by every request that reserves from it.
#[derive(Debug)]
pub struct MemoryPool {
    used: AtomicUsize,
    limit: usize,
}

impl MemoryPool {
    pub fn new(limit_bytes: usize) -> Arc<MemoryPool> {
        Arc::new(MemoryPool { used: AtomicUsize::new(0), limit: limit_bytes })
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit
    }

    /// Bytes reserved now.
    pub fn used_bytes(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// An empty reservation, to grow.
    pub fn reservation(self: &Arc<Self>) -> MemoryReservation {
        MemoryReservation { pool: self.clone(), bytes: 0 }
    }

    fn take(&self, bytes: usize) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let Some(next) = used.checked_add(bytes).filter(|n| *n <= self.limit) else { return false };
            match self.used.compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }
}

/// Bytes held from a [`MemoryPool`], given back when dropped.
#[derive(Debug)]
pub struct MemoryReservation {
    pool: Arc<MemoryPool>,
    bytes: usize,
}

impl MemoryReservation {
    /// Holds at least `bytes` in all; false (nothing more held) if the
    /// pool has not that much left.
    pub fn grow_to(&mut self, bytes: usize) -> bool {
        if bytes <= self.bytes {
            return true;
        }
        if !self.pool.take(bytes - self.bytes) {
            return false;
        }
        self.bytes = bytes;
        true
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn pool(&self) -> &Arc<MemoryPool> {
        &self.pool
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_share_the_pool_and_give_it_back() {
        let pool = MemoryPool::new(100);
        let mut a = pool.reservation();
        let mut b = pool.reservation();
        assert!(a.grow_to(60));
        assert!(a.grow_to(40), "a reservation never shrinks by growing");
        assert!(!b.grow_to(41));
        assert_eq!(b.bytes(), 0);
        assert!(b.grow_to(40));
        assert_eq!(pool.used_bytes(), 100);
        drop(a);
        assert_eq!(pool.used_bytes(), 40);
        assert!(b.grow_to(100));
        drop(b);
        assert_eq!(pool.used_bytes(), 0);
    }
}
