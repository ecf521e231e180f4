//! Scaling the Activity Monitors' constant-frequency count to cycles of the nominal rate.

/// The constant-frequency counter's total in cycles of the nominal rate.
///
/// That is `constant` (ticks at `constant_hz`, e.g. 19.2 MHz) as `⌊constant × nominal_mhz ×
/// 10⁶ / constant_hz⌋`, exactly, truncated to 64 bits (a wrap Windows differences through).
///
/// `NominalRate` is an integer in MHz and `CNTFRQ_EL0` rarely a whole MHz, so the counts are
/// scaled, not the rate. Scaling the running total rather than each delta is the remainder
/// carried between reads: every reported total is within one count of the exact value, so
/// `NominalRate × ΔActual / ΔNominal` is the true frequency to a count per interval and no
/// error accumulates however long the run.
#[must_use]
pub fn scale_constant_count(constant: u64, nominal_mhz: u32, constant_hz: u64) -> u64 {
    ConstantScale::new(nominal_mhz, constant_hz).apply(constant)
}

/// The ratio `nominal_mhz × 10⁶ / constant_hz`, reduced by its greatest common divisor.
///
/// Reduced at initialisation (19.2 MHz to 2 400 MHz is 125 / 1) so that the read path scales
/// with 64-bit divisions: `⌊c × n / d⌋ = (c / d) × n + ⌊(c mod d) × n / d⌋`, exact, the second
/// product in 64 bits whenever it fits (always for the reduced ratios of real rates), else in
/// 128.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstantScale {
    numerator: u64,
    denominator: core::num::NonZeroU64,
}

impl ConstantScale {
    /// No scaling.
    pub const IDENTITY: Self = Self { numerator: 1, denominator: core::num::NonZeroU64::MIN };

    /// `nominal_mhz` MHz per `constant_hz` Hz, reduced ([`Self::IDENTITY`] when `constant_hz`
    /// is 0).
    #[must_use]
    pub fn new(nominal_mhz: u32, constant_hz: u64) -> Self {
        if constant_hz == 0 {
            return Self::IDENTITY;
        }
        let numerator = u64::from(nominal_mhz).saturating_mul(1_000_000);
        let divisor = gcd(numerator, constant_hz).max(1);
        let denominator = constant_hz.checked_div(divisor).unwrap_or(constant_hz);
        core::num::NonZeroU64::new(denominator).map_or(Self::IDENTITY, |denominator| Self {
            numerator: numerator.checked_div(divisor).unwrap_or(numerator),
            denominator,
        })
    }

    /// `⌊constant × numerator / denominator⌋`, truncated to 64 bits.
    #[inline]
    #[must_use]
    pub fn apply(self, constant: u64) -> u64 {
        let (quotient, remainder) = (constant / self.denominator, constant % self.denominator);
        let whole = quotient.wrapping_mul(self.numerator);
        let part = remainder.checked_mul(self.numerator).map_or_else(
            || wide_part(remainder, self.numerator, self.denominator.get()),
            |product| product / self.denominator,
        );
        whole.wrapping_add(part)
    }
}

/// `⌊remainder × numerator / denominator⌋` in 128 bits (below `numerator`, so it fits).
#[cold]
#[inline(never)]
fn wide_part(remainder: u64, numerator: u64, denominator: u64) -> u64 {
    let part = u128::from(remainder)
        .saturating_mul(u128::from(numerator))
        .checked_div(u128::from(denominator))
        .unwrap_or(0);
    u64::try_from(part).unwrap_or(u64::MAX)
}

/// The greatest common divisor.
const fn gcd(mut a: u64, mut b: u64) -> u64 {
    while let Some(next) = a.checked_rem(b) {
        a = b;
        b = next;
    }
    a
}
