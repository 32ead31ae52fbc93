//! The principal of a TLS client: its certificate's subject as Java's
//! `X500Principal.getName()` prints it (RFC 2253: most specific RDN first,
//! `CN=alice,OU=eng,O=acme,C=US`), mapped through
//! `ssl.principal.mapping.rules` as Kafka's `SslPrincipalMapper` does:
//! rules tried in order, `RULE:<regex>/<replacement>/[LU]` applies when the
//! regex matches the whole name, `DEFAULT` keeps the name as it is, and a
//! name no rule maps fails the connection. Pure: no I/O.

use x509_parser::der_parser::asn1_rs::ToDer;
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::X509Name;

/// One mapping rule.
#[derive(Debug, Clone)]
enum Rule {
    /// `DEFAULT`: the distinguished name itself.
    Default,
    /// `RULE:pattern/replacement/[LU]`.
    Map {
        /// The whole-name match (`^(?:pattern)$`).
        pattern: regex::Regex,
        /// Java's replacement text (`$1`, `\$` escapes).
        replacement: String,
        case: Case,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

/// `ssl.principal.mapping.rules`, parsed.
#[derive(Debug, Clone)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    /// Parses Kafka's rule list: rules separated by commas (a pattern may
    /// hold commas of its own), `/` inside a pattern escaped as `\/`.
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        let mut rules = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("DEFAULT") {
                rules.push(Rule::Default);
                rest = after;
            } else if let Some(after) = rest.strip_prefix("RULE:") {
                let (pattern, after) = until_slash(after)
                    .ok_or_else(|| format!("Invalid rule: {rest} (no / after its pattern)"))?;
                let (replacement, after) = until_slash(after)
                    .ok_or_else(|| format!("Invalid rule: {rest} (no / after its replacement)"))?;
                let (case, after) = match after.chars().next() {
                    Some('L') => (Case::Lower, &after[1..]),
                    Some('U') => (Case::Upper, &after[1..]),
                    _ => (Case::Keep, after),
                };
                let pattern = regex::Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| format!("Invalid rule pattern {pattern}: {e}"))?;
                rules.push(Rule::Map {
                    pattern,
                    replacement: replacement.to_string(),
                    case,
                });
                // Kafka skips anything up to the next comma.
                rest = after
                    .split_once(',')
                    .map_or("", |(_, tail)| tail)
                    .trim_start();
                continue;
            } else if rest.starts_with(',') {
                // An empty rule is ignored, as Kafka does.
            } else {
                return Err(format!("Invalid rule: {rest}"));
            }
            rest = rest.trim_start();
            match rest.strip_prefix(',') {
                Some(after) => rest = after.trim_start(),
                None if rest.is_empty() => {}
                None => {
                    return Err(format!(
                        "Invalid rule: `{text}`, unmatched substring: `{rest}`"
                    ))
                }
            }
        }
        Ok(PrincipalMapper { rules })
    }

    /// The principal name of `distinguished_name`, or why none applies.
    pub fn name_of(&self, distinguished_name: &str) -> Result<String, String> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(distinguished_name.to_string()),
                Rule::Map {
                    pattern,
                    replacement,
                    case,
                } => {
                    let Some(captures) = pattern.captures(distinguished_name) else {
                        continue;
                    };
                    let mapped = java_replacement(replacement, &captures);
                    return Ok(match case {
                        Case::Keep => mapped,
                        Case::Lower => mapped.to_lowercase(),
                        Case::Upper => mapped.to_uppercase(),
                    });
                }
            }
        }
        Err(format!(
            "No rules apply to {distinguished_name}, rules {}",
            self.rules.len()
        ))
    }
}

/// `text` up to the first unescaped `/`, and what follows it.
fn until_slash(text: &str) -> Option<(&str, &str)> {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '/' if !escaped => return Some((&text[..i], &text[i + 1..])),
            _ => escaped = false,
        }
    }
    None
}

/// Java's `Matcher.replaceAll` replacement: `$n` is a group (as many
/// digits as name an existing group, Kafka's rule for `$12` with fewer
/// groups), `\x` is `x`; a group number past the groups stays literal.
fn java_replacement(replacement: &str, captures: &regex::Captures<'_>) -> String {
    let groups = captures.len() - 1;
    let mut out = String::new();
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '$' if chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                    digits.push(d);
                    chars.next();
                }
                // The longest prefix naming a group; the rest is text.
                let mut take = digits.len();
                while take > 1 && digits[..take].parse::<usize>().map_or(true, |n| n > groups) {
                    take -= 1;
                }
                match digits[..take].parse::<usize>() {
                    Ok(n) if n <= groups => {
                        out.push_str(captures.get(n).map_or("", |m| m.as_str()));
                        out.push_str(&digits[take..]);
                    }
                    _ => {
                        out.push('$');
                        out.push_str(&digits);
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The subject of a DER certificate as Java prints it (RFC 2253).
pub fn subject_of(certificate_der: &[u8]) -> Result<String, String> {
    let (_, certificate) = X509Certificate::from_der(certificate_der)
        .map_err(|e| format!("the client certificate cannot be read: {e}"))?;
    Ok(rfc2253(certificate.subject()))
}

/// RFC 2253's string form: RDNs last to first, `,` between them, `+`
/// inside a multi-valued one, the keywords RFC 2253 names (else the
/// dotted OID with the value as `#hex`), specials escaped.
fn rfc2253(name: &X509Name<'_>) -> String {
    let mut rdns: Vec<String> = Vec::new();
    for rdn in name.iter() {
        let parts: Vec<String> = rdn
            .iter()
            .map(|attribute| {
                let oid = attribute.attr_type().to_id_string();
                let keyword = match oid.as_str() {
                    "2.5.4.3" => Some("CN"),
                    "2.5.4.7" => Some("L"),
                    "2.5.4.8" => Some("ST"),
                    "2.5.4.10" => Some("O"),
                    "2.5.4.11" => Some("OU"),
                    "2.5.4.6" => Some("C"),
                    "2.5.4.9" => Some("STREET"),
                    "0.9.2342.19200300.100.1.25" => Some("DC"),
                    "0.9.2342.19200300.100.1.1" => Some("UID"),
                    _ => None,
                };
                match (keyword, attribute.as_str()) {
                    (Some(keyword), Ok(value)) => format!("{keyword}={}", escape(value)),
                    _ => {
                        let der = attribute.attr_value().to_der_vec().unwrap_or_default();
                        let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
                        format!("{oid}=#{hex}")
                    }
                }
            })
            .collect();
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    rdns.join(",")
}

fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kafka's documented example rules, as `SslPrincipalMapperTest` runs
    /// them.
    #[test]
    fn rules_map_as_kafkas_ssl_principal_mapper() {
        let mapper = PrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,\
             RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,\
             RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,\
             DEFAULT",
        )
        .expect("rules");
        let name = |dn: &str| mapper.name_of(dn).expect("mapped");
        assert_eq!(
            name("CN=kafka-server1,OU=ServiceUsers,O=Org,C=US"),
            "kafka-server1"
        );
        assert_eq!(
            name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US"),
            "duke@javasoft"
        );
        assert_eq!(name("OU=x,cn=Test.User,O=y"), "TEST.USER");
        assert_eq!(name("OU=nothing"), "OU=nothing");
        let strict = PrincipalMapper::parse("RULE:^CN=(.*?),OU=Users$/$1/").expect("rule");
        assert!(strict.name_of("CN=a,OU=Other").is_err(), "no rule applies");
        assert_eq!(
            PrincipalMapper::parse("DEFAULT")
                .expect("default")
                .name_of("CN=a")
                .expect("kept"),
            "CN=a"
        );
        // Escaped slashes and a group past the groups kept as text.
        let escaped = PrincipalMapper::parse("RULE:^CN=(.*)\\/x$/$1-$2/").expect("rule");
        assert_eq!(escaped.name_of("CN=a/x").expect("mapped"), "a-$2");
        assert!(PrincipalMapper::parse("RULE:^CN=(.*$/$1/").is_err());
        assert!(PrincipalMapper::parse("nonsense").is_err());
        assert!(PrincipalMapper::parse("RULE:a").is_err());
    }

    #[test]
    fn values_are_escaped_as_rfc_2253_says() {
        assert_eq!(escape("a,b"), "a\\,b");
        assert_eq!(escape(" lead"), "\\ lead");
        assert_eq!(escape("#x"), "\\#x");
        assert_eq!(escape("plain"), "plain");
    }
}
