//! The service range (`--service-cluster-ip-range`): an IPv4 CIDR and the
//! allocation offset of each usable address (0 = the first, the
//! `kubernetes` service's).

use std::net::Ipv4Addr;

/// An IPv4 range (`10.0.0.0/24`).
#[derive(Debug, Clone, Copy)]
pub struct Cidr {
    pub base: u32,
    pub bits: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (ip, bits) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR"))?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| format!("{s:?}: bad IPv4 address"))?;
        let bits: u8 = bits
            .parse()
            .ok()
            .filter(|b| *b <= 30)
            .ok_or_else(|| format!("{s:?}: bad prefix length"))?;
        let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
        Ok(Cidr {
            base: u32::from(ip) & mask,
            bits,
        })
    }

    /// The n-th address (1 = the first usable, the `kubernetes` service's).
    pub fn nth(&self, n: u32) -> Ipv4Addr {
        Ipv4Addr::from(self.base + n)
    }

    /// How many addresses may be handed out (all but network and broadcast).
    pub(super) fn usable(&self) -> u32 {
        (1u32 << (32 - u32::from(self.bits))) - 2
    }

    /// The allocation offset of `ip` (0 = the first usable address).
    pub(super) fn offset(&self, ip: Ipv4Addr) -> Option<u32> {
        let i = u32::from(ip).checked_sub(self.base + 1)?;
        (i < self.usable()).then_some(i)
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.nth(0), self.bits)
    }
}
