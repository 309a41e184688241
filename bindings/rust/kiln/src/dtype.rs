//! Element types, and the f16 and bf16 bit conversions a caller needs to fill buffers without a
//! crate of its own for them.
use kiln_sys as sys;

/// An element type (`kiln_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F16,
    BF16,
    /// One byte, true where nonzero.
    Bool,
    I32,
    I64,
}

impl DType {
    pub const ALL: [DType; 6] = [DType::F32, DType::F16, DType::BF16, DType::Bool, DType::I32, DType::I64];
    pub const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::Bool => 1,
            DType::I64 => 8,
        }
    }

    /// The name graph JSON uses: "f32", "f16", "bf16", "bool", "i32", "i64".
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::Bool => "bool",
            DType::I32 => "i32",
            DType::I64 => "i64",
        }
    }

    pub fn code(self) -> sys::kiln_dtype {
        match self {
            DType::F32 => sys::KILN_F32,
            DType::F16 => sys::KILN_F16,
            DType::BF16 => sys::KILN_BF16,
            DType::Bool => sys::KILN_BOOL,
            DType::I32 => sys::KILN_I32,
            DType::I64 => sys::KILN_I64,
        }
    }

    /// The DType of a `kiln_dtype` code; None for a code that is not one.
    pub fn from_code(code: i32) -> Option<DType> {
        DType::ALL.iter().copied().find(|t| t.code() == code)
    }
}

/// `x` rounded to bf16 (to nearest, ties to even), as its bits.
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    if x.is_nan() {
        return ((b >> 16) as u16) | 0x40; // stays a NaN
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `x` rounded to f16 (to nearest, ties to even), as its bits: overflow is infinity, tiny values
/// become subnormals or zero.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // A subnormal: the implicit bit made explicit, shifted into place, rounded.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut h = (m >> shift) as u16;
        if rest > half || (rest == half && (h & 1) == 1) {
            h += 1;
        }
        return sign | h;
    }
    let mut h = ((e as u32) << 10 | (man >> 13)) as u16;
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && (h & 1) == 1) {
        h += 1; // a carry into the exponent is right, up to infinity
    }
    sign | h
}

pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // A subnormal: value man * 2^-24.
            let v = man as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        0x1f => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 127 - 15) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_and_bf16_round_trip_and_round_to_nearest_even() {
        for &x in &[0.0f32, -0.0, 1.0, -2.5, 65504.0, 6.1035156e-5, 5.9604645e-8, 0.1, 3.14159] {
            let h = f32_to_f16(x);
            let back = f16_to_f32(h);
            assert!((back - x).abs() <= x.abs() * 1e-3 + 6e-8, "{} -> {:#x} -> {}", x, h, back);
            assert_eq!(f32_to_f16(back), h, "{}", x);
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // rounds up to infinity
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00); // a tie: to even
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(1.0 + 1.0 / 256.0), 0x3f80); // a tie: to even
        assert_eq!(f32_to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(bf16_to_f32(f32_to_bf16(-3.0)), -3.0);
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
    }
}
