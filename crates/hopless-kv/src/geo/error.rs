//! The errors the geo commands' arguments can earn, worded as Redis words them.

use std::borrow::Cow;
use std::fmt;

/// A geo argument Redis refuses. [`GeoError::text`] is the reply, code first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GeoError {
    /// A coordinate that is NaN: Redis's number parser refuses it before any range check.
    NotFloat,
    /// A longitude outside -180..=180 or a latitude outside ±85.05112878 (GEOADD, FROMLONLAT,
    /// GEORADIUS's centre).
    InvalidPair { lon: f64, lat: f64 },
    /// A unit other than m, km, ft or mi.
    UnsupportedUnit,
    /// A NaN radius (Redis's parser refuses it with this text).
    NeedNumericRadius,
    /// A radius below zero.
    NegativeRadius,
    /// A NaN box width.
    NeedNumericWidth,
    /// A NaN box height.
    NeedNumericHeight,
    /// A box width or height below zero.
    NegativeBox,
}

impl GeoError {
    /// Redis's reply text. `InvalidPair` prints both numbers as C's `%f` does: six decimals, every
    /// integer digit, `inf` and `-inf` for the infinities.
    pub fn text(&self) -> Cow<'static, str> {
        match *self {
            GeoError::NotFloat => Cow::Borrowed("ERR value is not a valid float"),
            GeoError::InvalidPair { lon, lat } => Cow::Owned(format!(
                "ERR invalid longitude,latitude pair {},{}",
                percent_f(lon),
                percent_f(lat)
            )),
            GeoError::UnsupportedUnit => {
                Cow::Borrowed("ERR unsupported unit provided. please use M, KM, FT, MI")
            }
            GeoError::NeedNumericRadius => Cow::Borrowed("ERR need numeric radius"),
            GeoError::NegativeRadius => Cow::Borrowed("ERR radius cannot be negative"),
            GeoError::NeedNumericWidth => Cow::Borrowed("ERR need numeric width"),
            GeoError::NeedNumericHeight => Cow::Borrowed("ERR need numeric height"),
            GeoError::NegativeBox => Cow::Borrowed("ERR height or width cannot be negative"),
        }
    }
}

/// C's `%f` (glibc): the exact decimal value rounded half to even at six decimals, as Rust's `{:.6}`
/// prints it; glibc's spellings of the non-finite values.
fn percent_f(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() { "-nan" } else { "nan" }.to_string()
    } else if v.is_infinite() {
        if v < 0.0 { "-inf" } else { "inf" }.to_string()
    } else {
        format!("{v:.6}")
    }
}

impl fmt::Display for GeoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for GeoError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_f_prints_as_glibc() {
        assert_eq!(percent_f(200.0), "200.000000");
        assert_eq!(percent_f(85.05112879), "85.051129");
        assert_eq!(percent_f(-0.0), "-0.000000");
        assert_eq!(percent_f(0.0000005), "0.000000");
        assert_eq!(percent_f(0.0000015), "0.000002");
        assert_eq!(percent_f(f64::INFINITY), "inf");
        assert_eq!(percent_f(f64::NEG_INFINITY), "-inf");
        assert_eq!(percent_f(f64::NAN), "nan");
    }
}
