//! Unsigned big integers, just what `long_double.rs` needs to read, add and print x87 values exactly:
//! multiply and add small numbers, shift, compare, add, subtract, a short quotient, decimal text.

/// An unsigned big integer, 32-bit limbs, least significant first, no high zero limbs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Big(pub(super) Vec<u32>);

impl Big {
    pub(super) fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }

    pub(super) fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn bits(&self) -> i64 {
        match self.0.last() {
            None => 0,
            Some(&top) => self.0.len() as i64 * 32 - top.leading_zeros() as i64,
        }
    }

    pub(super) fn bit(&self, i: i64) -> bool {
        let (limb, off) = ((i / 32) as usize, i % 32);
        i >= 0 && self.0.get(limb).is_some_and(|l| (l >> off) & 1 == 1)
    }

    /// Whether any bit below `i` is set.
    pub(super) fn any_below(&self, i: i64) -> bool {
        if i <= 0 {
            return false;
        }
        let (limb, off) = ((i / 32) as usize, i % 32);
        self.0.iter().take(limb).any(|&l| l != 0)
            || (off != 0 && self.0.get(limb).is_some_and(|l| l & ((1u32 << off) - 1) != 0))
    }

    pub(super) fn mul_add_small(&mut self, mul: u32, add: u32) {
        let mut carry = add as u64;
        for l in self.0.iter_mut() {
            let v = *l as u64 * mul as u64 + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    /// `(self / d, self % d)`.
    pub(super) fn divmod_small(&self, d: u32) -> (Big, u32) {
        let mut q = vec![0u32; self.0.len()];
        let mut rem = 0u64;
        for i in (0..self.0.len()).rev() {
            let cur = (rem << 32) | self.0[i] as u64;
            q[i] = (cur / d as u64) as u32;
            rem = cur % d as u64;
        }
        let mut q = Big(q);
        q.trim();
        (q, rem as u32)
    }

    pub(super) fn shl(&self, n: i64) -> Big {
        if self.is_zero() || n <= 0 {
            return self.clone();
        }
        let (limbs, off) = ((n / 32) as usize, (n % 32) as u32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            out.push(if off == 0 { l } else { (l << off) | carry });
            carry = if off == 0 { 0 } else { l >> (32 - off) };
        }
        out.push(carry);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// The bits from `n` up, as a u64 (the caller knows they fit).
    pub(super) fn shr_u64(&self, n: i64) -> u64 {
        (0..64).fold(0u64, |acc, k| acc | ((self.bit(n + k) as u64) << k))
    }

    pub(super) fn pow10(n: u32) -> Big {
        let mut b = Big::from_u64(1);
        let mut left = n;
        while left > 0 {
            let step = left.min(9);
            b.mul_add_small(10u32.pow(step), 0);
            left -= step;
        }
        b
    }

    pub(super) fn cmp(&self, o: &Big) -> core::cmp::Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }

    pub(super) fn add(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len().max(o.0.len()) + 1);
        let mut carry = 0u64;
        for i in 0..self.0.len().max(o.0.len()) {
            let v = *self.0.get(i).unwrap_or(&0) as u64 + *o.0.get(i).unwrap_or(&0) as u64 + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        out.push(carry as u32);
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `self - o`, with `self >= o`.
    pub(super) fn sub(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let mut v = self.0[i] as i64 - *o.0.get(i).unwrap_or(&0) as i64 - borrow;
            borrow = (v < 0) as i64;
            if v < 0 {
                v += 1 << 32;
            }
            out.push(v as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }

    /// `(self / d, self % d != 0)` for a quotient under 2^128, by shift and subtract.
    pub(super) fn div_sticky(&self, d: &Big) -> (Big, bool) {
        let mut r = self.clone();
        let mut q = 0u128;
        let top = (self.bits() - d.bits()).clamp(0, 127);
        for i in (0..=top).rev() {
            let s = d.shl(i);
            if r.cmp(&s) != core::cmp::Ordering::Less {
                r = r.sub(&s);
                q |= 1 << i;
            }
        }
        let q = Big::from_u64((q >> 64) as u64)
            .shl(64)
            .add(&Big::from_u64(q as u64));
        (q, !r.is_zero())
    }

    pub(super) fn to_decimal(&self) -> String {
        let mut parts = Vec::new();
        let mut cur = self.clone();
        while !cur.is_zero() {
            let (q, r) = cur.divmod_small(1_000_000_000);
            parts.push(r);
            cur = q;
        }
        let mut s = parts.pop().map_or_else(|| "0".to_string(), |p| p.to_string());
        for p in parts.iter().rev() {
            s.push_str(&format!("{p:09}"));
        }
        s
    }
}

pub(super) fn mul(a: &Big, b: &Big) -> Big {
    let mut out = vec![0u32; a.0.len() + b.0.len() + 1];
    for (i, &x) in a.0.iter().enumerate() {
        let mut carry = 0u64;
        for (j, &y) in b.0.iter().enumerate() {
            let v = out[i + j] as u64 + x as u64 * y as u64 + carry;
            out[i + j] = v as u32;
            carry = v >> 32;
        }
        let mut k = i + b.0.len();
        while carry != 0 {
            let v = out[k] as u64 + carry;
            out[k] = v as u32;
            carry = v >> 32;
            k += 1;
        }
    }
    let mut r = Big(out);
    r.trim();
    r
}

/// `n >> k` (k > 0).
pub(super) fn shr(n: &Big, k: i64) -> Big {
    let (limbs, off) = ((k / 32) as usize, (k % 32) as u32);
    if limbs >= n.0.len() {
        return Big(Vec::new());
    }
    let src = &n.0[limbs..];
    let mut out = Vec::with_capacity(src.len());
    for i in 0..src.len() {
        let lo = src[i] >> off;
        let hi = if off == 0 {
            0
        } else {
            src.get(i + 1).map_or(0, |&h| h << (32 - off))
        };
        out.push(lo | hi);
    }
    let mut b = Big(out);
    b.trim();
    b
}
