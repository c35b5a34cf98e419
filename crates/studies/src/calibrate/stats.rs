//! Rounds into estimates: the mean of each fitted quantity and the
//! half-width of its 95% confidence interval (Student's t over the rounds'
//! values, which are independent repetitions of the same measurement).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A quantity measured once per round.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub mean: f64,
    /// Half-width of the 95% confidence interval; None with one round.
    pub ci95: Option<f64>,
    pub rounds: usize,
}

impl Estimate {
    pub fn of(values: &[f64]) -> Estimate {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n.max(1) as f64;
        let ci95 = (n >= 2).then(|| {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let t = StudentsT::new(0.0, 1.0, (n - 1) as f64)
                .map(|d| d.inverse_cdf(0.975))
                .unwrap_or(f64::NAN);
            t * (var / n as f64).sqrt()
        });
        Estimate {
            mean,
            ci95,
            rounds: n,
        }
    }
    /// A value chosen, not measured per round (`rounds` 0: no interval).
    pub fn chosen(value: f64) -> Estimate {
        Estimate {
            mean: value,
            ci95: None,
            rounds: 0,
        }
    }
    /// The interval's half-width as % of the mean.
    pub fn ci95_pct(&self) -> Option<f64> {
        self.ci95.map(|c| {
            if self.mean != 0.0 {
                100.0 * c / self.mean.abs()
            } else {
                0.0
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_of_known_samples() {
        // mean 10, sample sd 1, n = 3: t(0.975, 2) = 4.303; 4.303/sqrt(3) = 2.484
        let e = Estimate::of(&[9.0, 10.0, 11.0]);
        assert_eq!(e.mean, 10.0);
        assert!((e.ci95.unwrap() - 2.484).abs() < 0.001, "{e:?}");
        assert!(Estimate::of(&[5.0]).ci95.is_none());
        assert_eq!(Estimate::of(&[2.0, 2.0]).ci95, Some(0.0));
    }
}
