//! Parses human memory sizes ("512MB", "1GiB", "1.5 Gi", "4096") into exact byte counts.
//!
//! Units follow Kubernetes: K/KB/M/MB/G/GB/T/TB are powers of 1000, Ki/KiB/Mi/MiB/... powers
//! of 1024; case does not matter and "B" or no unit means bytes. Fractions are allowed when
//! the result is a whole number of bytes; arithmetic is exact (no floats).

/// Parse `text` into bytes; `Err` carries a message suitable for a `ValueError`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let number: String = number.chars().filter(|&c| c != '_').collect();
    let multiplier = unit_multiplier(unit.trim())
        .ok_or_else(|| format!("invalid memory size {text:?}: unknown unit {:?}", unit.trim()))?;
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(format!("invalid memory size {text:?}: no number"));
    }
    if frac_part.contains('.') || frac_part.len() > 18 {
        return Err(format!("invalid memory size {text:?}: malformed number"));
    }
    let too_big = || format!("invalid memory size {text:?}: larger than 2**64-1 bytes");
    let digits = format!("{int_part}{frac_part}");
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse::<u128>().map_err(|_| too_big())?
    };
    let scale = 10u128.pow(frac_part.len() as u32);
    let scaled = mantissa.checked_mul(multiplier as u128).ok_or_else(too_big)?;
    if scaled % scale != 0 {
        return Err(format!("invalid memory size {text:?}: not a whole number of bytes"));
    }
    u64::try_from(scaled / scale).map_err(|_| too_big())
}

fn unit_multiplier(unit: &str) -> Option<u64> {
    let u = unit.to_ascii_lowercase();
    let u = u.strip_suffix('b').unwrap_or(&u);
    // "b" alone stripped to "", and "ib" would be junk.
    let (prefix, binary) = match u.strip_suffix('i') {
        Some(p) if !p.is_empty() => (p, true),
        Some(_) => return None,
        None => (u, false),
    };
    let power = match prefix {
        "" => return if binary { None } else { Some(1) },
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" => 5,
        _ => return None,
    };
    let base: u64 = if binary { 1024 } else { 1000 };
    Some(base.pow(power))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn parses_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512MB"), Ok(512_000_000));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size(" 1.5 Gi "), Ok(3 << 29));
        assert_eq!(parse_size("2k"), Ok(2000));
        assert_eq!(parse_size("10b"), Ok(10));
        assert_eq!(parse_size("0"), Ok(0));
    }

    #[test]
    fn rejects_junk() {
        for bad in ["", "abc", "1.2.3", "12XB", "0.5B", "1ib", "-1", "1e9", "99999999999999999999PiB", "GB"] {
            assert!(parse_size(bad).is_err(), "{bad:?} should be rejected");
        }
    }
}
