//! A radix sort of a load's packed keys (`sort::Packing`): 128-bit
//! integers whose set bits are all below a known width.
//!
//! Most significant digit first, 8 bits a digit, out of place between the
//! keys and a scratch buffer of the same length: each level counts its
//! digit, scatters the keys into their buckets in the other buffer and
//! sorts each bucket by the next digit; a bucket of at most
//! [`SMALL_BUCKET`] keys is sorted by comparisons, and a level where every
//! key has the same digit scatters nothing. 4.8M keys take two or three
//! scattering levels, a few reads and writes of each key, where a
//! comparison sort moves each key about 22 times (log2 n) with a
//! hard-to-predict branch each; the load's three orderings were sorted
//! with `sort_unstable` before, about 7% of its CPU.

/// Buckets this small are sorted by comparisons.
const SMALL_BUCKET: usize = 64;

/// Sorts `keys`, whose bits at `width` and above are all zero.
pub(crate) fn radix_sort(keys: &mut [u128], width: u32) {
    debug_assert!(width <= 128);
    debug_assert!(width == 128 || keys.iter().all(|k| k >> width == 0));
    if keys.len() <= SMALL_BUCKET {
        keys.sort_unstable();
        return;
    }
    // A buffer already sorted (one ordering's keys are the buffer's own
    // order) costs one pass.
    if keys.is_sorted() {
        return;
    }
    let mut scratch = vec![0u128; keys.len()];
    sort_level(keys, &mut scratch, false);
}

/// Sorts `src`; the sorted keys end in `dst` if `into_dst`, else in `src`
/// (both are overwritten; they have the same length). The digit is the
/// 8 bits from the highest one that differs between the keys down: the
/// bits above are the same in all of them (the ids' tags and high bits,
/// a bucket's digits so far), so no pass is spent on them.
fn sort_level(src: &mut [u128], dst: &mut [u128], into_dst: bool) {
    let n = src.len();
    if n <= SMALL_BUCKET {
        src.sort_unstable();
        if into_dst {
            dst.copy_from_slice(src);
        }
        return;
    }
    let first = src[0];
    let differ = src.iter().fold(0u128, |d, k| d | (k ^ first));
    if differ == 0 {
        // Equal keys.
        if into_dst {
            dst.copy_from_slice(src);
        }
        return;
    }
    let shift = (127 - differ.leading_zeros()).saturating_sub(7);
    let digit = |k: u128| (k >> shift) as usize & 0xFF;
    let mut counts = [0usize; 256];
    for k in src.iter() {
        counts[digit(*k)] += 1;
    }
    let mut starts = [0usize; 256];
    let mut sum = 0;
    for (start, count) in starts.iter_mut().zip(&counts) {
        *start = sum;
        sum += count;
    }
    let mut next = starts;
    for k in src.iter() {
        let d = digit(*k);
        dst[next[d]] = *k;
        next[d] += 1;
    }
    // The buckets are in `dst` now; each is sorted into where the keys
    // must end.
    for (start, count) in starts.iter().zip(&counts) {
        let range = *start..*start + *count;
        if *count <= 1 || shift == 0 {
            // Sorted already (its keys are equal at the last digit).
            if !into_dst {
                src[range.clone()].copy_from_slice(&dst[range]);
            }
        } else if *count > 0 {
            sort_level(&mut dst[range.clone()], &mut src[range], !into_dst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    fn check(mut keys: Vec<u128>, width: u32) {
        let mut expected = keys.clone();
        expected.sort_unstable();
        radix_sort(&mut keys, width);
        assert_eq!(keys, expected);
    }

    fn random(n: usize, width: u32, seed: u64) -> Vec<u128> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                let k = (xorshift(&mut x) as u128) << 64 | xorshift(&mut x) as u128;
                if width == 128 {
                    k
                } else {
                    k & ((1u128 << width) - 1)
                }
            })
            .collect()
    }

    #[test]
    fn random_keys_sort_as_the_standard_sort_does() {
        for (n, width) in [(100, 1), (1000, 7), (5000, 8), (5000, 9), (20_000, 64), (20_000, 104), (50_000, 128), (3000, 61)] {
            check(random(n, width, 0x9E37_79B9_7F4A_7C15 ^ n as u64 ^ width as u64), width);
        }
    }

    #[test]
    fn duplicates_and_skewed_digits_sort() {
        // Few distinct keys, many times each (every bucket full of equal
        // keys down to the last digit).
        let keys: Vec<u128> = random(20_000, 128, 3).into_iter().map(|k| k % 5 * (1u128 << 90)).collect();
        check(keys, 93);
        // One key many times: every level is one bucket.
        check(vec![12_345u128 << 40; 1000], 60);
        // Like a POS ordering: a few predicates in the top bits, one of
        // them with most keys, objects and subjects below.
        let mut x = 11u64;
        let keys: Vec<u128> = (0..30_000)
            .map(|_| {
                let r = xorshift(&mut x);
                let p = if r % 4 == 0 { r % 13 } else { 3 } as u128;
                let o = if r % 3 == 0 { (r >> 8) % 20 } else { r >> 20 } as u128;
                p << 98 | o << 34 | (xorshift(&mut x) >> 43) as u128
            })
            .collect();
        check(keys, 102);
        // Sorted, reversed, sorted with one key out of place.
        let mut keys = random(10_000, 80, 5);
        keys.sort_unstable();
        check(keys.clone(), 80);
        keys.reverse();
        check(keys.clone(), 80);
        keys.reverse();
        keys.swap(17, 9000);
        check(keys, 80);
    }

    #[test]
    fn empty_and_one_key() {
        check(Vec::new(), 10);
        check(vec![42], 10);
        check(vec![u128::MAX], 128);
        check(vec![0; 65], 0);
        check(vec![1, 0].repeat(40), 1);
    }
}
