//! How the geo commands print numbers: distances with four decimals (GEODIST, WITHDIST), coordinates
//! with up to seventeen (GEOPOS, WITHCOORD).

/// `addReplyDoubleDistance` (`fixedpoint_d2string(.., 4)`): the distance times 10000 rounded to an
/// integer half to even (`llrint`), printed with four decimals. NaN and values past the 64-bit range
/// print as `llrint`'s x86-64 overflow value, -2^63.
pub fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let scaled = d * 10000.0;
    let svalue: i64 = if !(-TWO_63..TWO_63).contains(&scaled) {
        i64::MIN
    } else {
        scaled.round_ties_even() as i64
    };
    let sign = if svalue < 0 { "-" } else { "" };
    let value = svalue.unsigned_abs();
    format!("{sign}{}.{:04}", value / 10000, value % 10000)
}

/// `addReplyHumanLongDouble` of a `double` (`%.17Lf` without trailing zeros nor a bare point, `-0` as
/// `0`; the infinities as `inf` and `-inf`). The `long double` holds the `double` exactly, so this is
/// the `double`'s exact decimal value rounded half to even at 17 decimals, which Rust's `{:.17}`
/// prints.
pub fn format_coordinate(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    let s = format!("{x:.17}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_print_with_four_decimals() {
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(-0.0), "0.0000");
        assert_eq!(format_distance(0.0001), "0.0001");
        assert_eq!(format_distance(6.064_295_159_839_17e-5), "0.0001");
        assert_eq!(format_distance(0.00004), "0.0000");
        assert_eq!(format_distance(-0.00004), "0.0000");
        assert_eq!(format_distance(-1.5), "-1.5000");
        assert_eq!(format_distance(166274.15156960033), "166274.1516");
        // Ties go to even: 2.5 and 0.5 ten-thousandths down, 3.5 up.
        assert_eq!(format_distance(0.00025), "0.0002");
        assert_eq!(format_distance(0.00005), "0.0000");
        assert_eq!(format_distance(0.00035), "0.0004");
        assert_eq!(format_distance(0.00015), "0.0001");
        assert_eq!(format_distance(12345678.9), "12345678.9000");
        assert_eq!(format_distance(f64::NAN), "-922337203685477.5808");
        assert_eq!(format_distance(f64::INFINITY), "-922337203685477.5808");
    }

    #[test]
    fn coordinates_print_as_redis_humans_read_them() {
        assert_eq!(format_coordinate(0.0), "0");
        assert_eq!(format_coordinate(-0.0), "0");
        assert_eq!(format_coordinate(180.0), "180");
        assert_eq!(format_coordinate(-179.5), "-179.5");
        assert_eq!(format_coordinate(-1e-18), "0");
        assert_eq!(format_coordinate(2f64.powi(-18)), "0.00000381469726562");
        assert_eq!(format_coordinate(13.361389338970184), "13.36138933897018433");
        assert_eq!(format_coordinate(f64::INFINITY), "inf");
    }
}
