//! Where a write's records start, so that rustls copies large buffers fast.
//!
//! rustls copies each record's plaintext into a buffer of the record's own,
//! after its 5-byte header ([`RECORD_HEADER`]); every write starts a record,
//! and a record holds at most 16 KiB, a multiple of [`COPY_ALIGN`]. A copy of
//! more than about 2 KiB goes to glibc's `rep movsb`, which on AMD Zen 3 (the
//! hosts these figures come from) moves ~2.8 GB/s when the destination is
//! neither aligned to 32 bytes nor at the source's offset modulo 32, against
//! ~45 GB/s when it is: copying a LIST's 14 MB into records took a quarter of
//! the server's CPU for that LIST, more than encrypting them.
//!
//! So a large buffer that would land at the wrong offset starts a write of
//! its own at its first byte whose address is [`RECORD_HEADER`] modulo
//! [`COPY_ALIGN`]: a record buffer's start is aligned (the allocator aligns
//! blocks of record size), so that byte lands at the same offset modulo 32 as
//! its source, and every later record of the write does too. The bytes before
//! it (at most 31 of the buffer, plus whatever small buffers came before it)
//! go out as a short record. Which bytes are sent, and their order, do not
//! change.

use std::io::IoSlice;

/// The bytes before a record's plaintext in rustls's record buffer.
pub const RECORD_HEADER: usize = 5;
/// The alignment at which large copies run at full speed.
pub const COPY_ALIGN: usize = 32;
/// Buffers this long or longer are placed; a shorter copy does not use
/// `rep movsb` at all, or is not worth a record of its own.
pub const ALIGN_FROM: usize = 4 * 1024;
/// At most this many record starts are placed per write; later large buffers
/// of the same write are placed when it is called again with them.
pub const MAX_STARTS: usize = 8;

/// The offsets (bytes from the first byte of `bufs`) at which to start a new
/// write, in increasing order, each above 0 and below the total length; as
/// an array and how many of it are used.
pub fn record_starts(bufs: &[IoSlice<'_>]) -> ([usize; MAX_STARTS], usize) {
    let mut starts = [0; MAX_STARTS];
    let mut n = 0;
    let mut pos = 0;
    let mut write_start = 0;
    for buf in bufs {
        if buf.len() >= ALIGN_FROM && n < MAX_STARTS {
            let addr = buf.as_ptr() as usize;
            // Where the buffer's first byte lands, modulo COPY_ALIGN.
            let lands = RECORD_HEADER + (pos - write_start);
            if !addr.wrapping_sub(lands).is_multiple_of(COPY_ALIGN) {
                // Never 0: a buffer at the write's first byte is misaligned
                // only when its address is not RECORD_HEADER modulo
                // COPY_ALIGN, and then the distance to such an address is not 0.
                let at = pos + RECORD_HEADER.wrapping_sub(addr) % COPY_ALIGN;
                starts[n] = at;
                n += 1;
                write_start = at;
            }
        }
        pos += buf.len();
    }
    (starts, n)
}

/// The slices of `bufs` between byte offsets `from` and `to`, in `out`
/// (which must have room for `bufs.len()` slices); how many were written.
pub fn between<'b>(
    bufs: &'b [IoSlice<'_>],
    from: usize,
    to: usize,
    out: &mut [IoSlice<'b>],
) -> usize {
    let mut n = 0;
    let mut pos = 0;
    for buf in bufs {
        let (start, end) = (pos, pos + buf.len());
        pos = end;
        if end <= from || buf.is_empty() {
            continue;
        }
        if start >= to {
            break;
        }
        let bytes: &'b [u8] = buf;
        out[n] = IoSlice::new(&bytes[from.saturating_sub(start)..(to - start).min(bytes.len())]);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each large buffer lands, in the write that holds its first byte (from
    /// the last record start before it), at its own offset modulo
    /// [`COPY_ALIGN`]; the starts rise and stay inside the write.
    fn check(bufs: &[IoSlice<'_>]) -> usize {
        let (starts, n) = record_starts(bufs);
        let starts = &starts[..n];
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
        assert!(starts.iter().all(|&s| s > 0 && s < total), "{starts:?}");
        let mut pos = 0;
        let mut placed = 0;
        for buf in bufs {
            if buf.len() >= ALIGN_FROM && placed < MAX_STARTS {
                placed += 1;
                // The buffer's first byte at or after the last start.
                let write = starts.iter().rev().find(|&&s| s <= pos + COPY_ALIGN);
                let write = write.copied().unwrap_or(0);
                let first = write.max(pos);
                let addr = buf.as_ptr() as usize + (first - pos);
                assert_eq!(
                    (addr - (RECORD_HEADER + first - write)) % COPY_ALIGN,
                    0,
                    "buffer at {pos} (address {addr:#x}) lands misaligned; starts {starts:?}"
                );
            }
            pos += buf.len();
        }
        n
    }

    #[test]
    fn large_buffers_start_records_where_their_copies_are_aligned() {
        let big = vec![7u8; 200_000];
        let small = vec![1u8; 300];
        let mut split = 0;
        for a in 0..COPY_ALIGN {
            for b in 0..COPY_ALIGN {
                let first = IoSlice::new(&big[a..a + 70_000]);
                let second = IoSlice::new(&big[100_000 + b..150_000]);
                let head = IoSlice::new(&small[..7 + b]);
                let crlf = IoSlice::new(&small[..2]);
                split += check(&[head, first, crlf, head, second, crlf]);
                split += check(&[first]);
                split += check(&[first, second]);
                split += check(&[head, crlf]);
            }
        }
        assert!(split > 0, "misaligned buffers were split");
    }

    #[test]
    fn small_writes_are_never_split() {
        let bytes = vec![0u8; ALIGN_FROM + COPY_ALIGN];
        for a in 0..COPY_ALIGN {
            let one = IoSlice::new(&bytes[a..a + ALIGN_FROM - 1]);
            assert_eq!(record_starts(&[one, one, one]).1, 0);
        }
    }

    #[test]
    fn the_pieces_between_starts_are_the_write_in_order() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let bufs = [
            IoSlice::new(&data[..7]),
            IoSlice::new(&data[7..40_003]),
            IoSlice::new(&[]),
            IoSlice::new(&data[40_003..40_005]),
            IoSlice::new(&data[40_005..100_000]),
        ];
        let (starts, n) = record_starts(&bufs);
        let mut cuts = vec![0];
        cuts.extend_from_slice(&starts[..n]);
        cuts.push(data.len());
        let mut joined = Vec::new();
        for w in cuts.windows(2) {
            let mut out = [IoSlice::new(&[]); 5];
            let k = between(&bufs, w[0], w[1], &mut out);
            let piece: Vec<u8> = out[..k].iter().flat_map(|s| s.iter().copied()).collect();
            assert_eq!(piece.len(), w[1] - w[0]);
            joined.extend(piece);
        }
        assert_eq!(joined, data);
        // Any range, not only the starts.
        for (from, to) in [
            (0, 1),
            (5, 9),
            (6, 40_004),
            (40_004, 40_006),
            (99_999, 100_000),
        ] {
            let mut out = [IoSlice::new(&[]); 5];
            let k = between(&bufs, from, to, &mut out);
            let piece: Vec<u8> = out[..k].iter().flat_map(|s| s.iter().copied()).collect();
            assert_eq!(piece, data[from..to], "{from}..{to}");
        }
    }
}
