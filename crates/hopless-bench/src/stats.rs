//! Summaries of a set of samples, as every bench reports them: the median, and the smallest and largest.

/// The median of a set of samples (the mean of the middle two for an even count; NaN for none).
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of one figure over a set of runs.
pub fn median_of<R>(runs: &[R], figure: impl Fn(&R) -> f64) -> f64 {
    median(&runs.iter().map(figure).collect::<Vec<_>>())
}

/// The smallest and the largest sample (infinity and minus infinity for none).
pub fn min_max(samples: impl IntoIterator<Item = f64>) -> (f64, f64) {
    samples
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median_of(&[(1, 3.0), (2, 1.0), (3, 2.0)], |r| r.1), 2.0);
    }

    #[test]
    fn min_max_spans_the_samples() {
        assert_eq!(min_max([2.0, 1.0, 3.0]), (1.0, 3.0));
        assert_eq!(min_max([]), (f64::INFINITY, f64::NEG_INFINITY));
    }
}
