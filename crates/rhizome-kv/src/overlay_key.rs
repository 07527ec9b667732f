//! The key of a transaction's overlay: bytes ordered as bytes, compared
//! eight at a time as big-endian words. An LDP PUT of 200 triples puts
//! some 1,300 keys (most of them 24 or 32 bytes of ids) into its
//! overlay; with `Vec<u8>` keys each of the ~11 comparisons of an insert
//! was a call to `memcmp` (issue 46: 0.3M of the PUT's 8.5M
//! instructions).

use std::borrow::Borrow;
use std::cmp::Ordering;

/// Key bytes as the overlay orders them (the same order as `[u8]`'s).
#[repr(transparent)]
#[derive(PartialEq, Eq, Debug)]
pub(crate) struct KeyBytes([u8]);

impl KeyBytes {
    pub(crate) fn new(bytes: &[u8]) -> &KeyBytes {
        // SAFETY: `KeyBytes` is `repr(transparent)` over `[u8]`, so the
        // two references have the same layout and metadata (the length).
        unsafe { &*(bytes as *const [u8] as *const KeyBytes) }
    }
}

impl Ord for KeyBytes {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&self.0, &other.0);
        let n = a.len().min(b.len());
        let mut i = 0;
        while i + 8 <= n {
            let x = u64::from_be_bytes(a[i..i + 8].try_into().expect("8 bytes"));
            let y = u64::from_be_bytes(b[i..i + 8].try_into().expect("8 bytes"));
            if x != y {
                return x.cmp(&y);
            }
            i += 8;
        }
        // Equal on the whole words both have: the rest decides, byte by
        // byte, then the length (a key sorts before its extensions).
        while i < n {
            if a[i] != b[i] {
                return a[i].cmp(&b[i]);
            }
            i += 1;
        }
        a.len().cmp(&b.len())
    }
}

impl PartialOrd for KeyBytes {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An owned overlay key.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct OverlayKey(pub(crate) Vec<u8>);

impl OverlayKey {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Borrow<KeyBytes> for OverlayKey {
    fn borrow(&self) -> &KeyBytes {
        KeyBytes::new(&self.0)
    }
}

impl Ord for OverlayKey {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        KeyBytes::new(&self.0).cmp(KeyBytes::new(&other.0))
    }
}

impl PartialOrd for OverlayKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys of every length up to 20 bytes over a few byte values, so that
    /// words, tails and prefixes all meet: the overlay's order must be
    /// the bytes' order, or a transaction's scans would skip its writes.
    #[test]
    fn keys_order_as_their_bytes() {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 21) as usize;
            let key: Vec<u8> = (0..len).map(|i| [0u8, 1, 0x7f, 0x80, 0xff][((state >> (i * 3)) % 5) as usize]).collect();
            keys.push(key);
        }
        for a in &keys {
            for b in keys.iter().step_by(7) {
                assert_eq!(KeyBytes::new(a).cmp(KeyBytes::new(b)), a.as_slice().cmp(b.as_slice()), "{a:?} against {b:?}");
                assert_eq!(OverlayKey(a.clone()).cmp(&OverlayKey(b.clone())), a.cmp(b));
            }
        }
    }
}
