//! A URL as the tool shows it: in messages, `scenario.toml`, `summary.md` and `report.html`.
//! The password of `http://user:SECRET@host/`, the values of `?key=SECRET` and a fragment
//! (`#access_token=SECRET`) are credentials as often as not, so they are replaced by `***`
//! wherever a URL is shown (the request itself still carries them, but for the fragment, which
//! is never sent); a URL of kilobytes is cut to its start and its length.

/// The longest URL shown whole, in bytes; a longer one is cut to its first
/// [`SHOWN_PREFIX`] bytes and its length.
pub const MAX_SHOWN: usize = 200;
const SHOWN_PREFIX: usize = 120;

/// `url` with its userinfo and query values replaced by `***`, cut when longer than
/// [`MAX_SHOWN`] bytes. Works on any text: what is not a URL is only cut.
pub fn shown_url(url: &str) -> String {
    let redacted = without_secrets(url);
    if redacted.len() <= MAX_SHOWN {
        return redacted;
    }
    let mut end = SHOWN_PREFIX;
    while !redacted.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &redacted[..end], url.len())
}

/// `url` with its userinfo, query values and fragment replaced by `***`, not cut: for a
/// file that reads the URL back (a store's `url` in the results' `scenario.toml`).
pub fn without_secrets(url: &str) -> String {
    let (scheme, rest) = split_scheme(url);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("***{}", &authority[at..]),
        None => authority.to_string(),
    };
    // A fragment (`#access_token=…`) is a credential as often as a query value.
    let (tail, fragment) = match tail.find('#') {
        Some(h) if h + 1 < tail.len() => (&tail[..h], "#***"),
        _ => (tail, ""),
    };
    let tail = match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None if pair.is_empty() => String::new(),
                    None => "***".to_string(),
                })
                .collect();
            format!("{path}{}", pairs.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}{fragment}")
}

/// The scheme with its `:` and slashes, and the rest: `http://` or a mistyped `http:/` or
/// `http:` alike, so the userinfo after it is found either way; none when the text starts
/// with no scheme.
fn split_scheme(url: &str) -> (&str, &str) {
    let colon = match url.find("://") {
        Some(i) => i,
        None => {
            let Some(colon) = url.find(':') else {
                return ("", url);
            };
            let name = &url[..colon];
            let is_scheme = name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if !is_scheme {
                return ("", url);
            }
            colon
        }
    };
    let after = &url[colon + 1..];
    let slashes = after.len() - after.trim_start_matches('/').len();
    url.split_at(colon + 1 + slashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_and_query_values_are_hidden() {
        assert_eq!(
            shown_url("http://user:SECRET@host:8080/v1?key=SECRET&page=2"),
            "http://***@host:8080/v1?key=***&page=***"
        );
        assert_eq!(shown_url("https://h/?SECRET"), "https://h/?***");
        assert_eq!(shown_url("http://h/a@b"), "http://h/a@b");
        assert_eq!(
            shown_url("http://127.0.0.1:9292/"),
            "http://127.0.0.1:9292/"
        );
        assert_eq!(shown_url("notaurl"), "notaurl");
        assert_eq!(
            shown_url("http://h/cb?x=1#access_token=SECRET"),
            "http://h/cb?x=***#***"
        );
        assert_eq!(shown_url("http://h/#"), "http://h/#");
        assert_eq!(shown_url("http:/alice:SECRET@h/p"), "http:/***@h/p");
        // What is not a URL keeps its text.
        assert_eq!(shown_url("clients.*.jitter=0.0"), "clients.*.jitter=0.0");
        assert_eq!(shown_url("run.duration=1h"), "run.duration=1h");
        for url in [
            "http://u:SECRET@h/",
            "http://h/?k=SECRET",
            "http://h/p?a=1&k=SECRET#f",
            "https://SECRET@h?x=SECRET",
            "http://h/cb#access_token=SECRET",
            "http://h/cb?x=1#access_token=SECRET",
            "http:/alice:SECRET@h/",
            "http:alice:SECRET@h/",
            "HTTP:///alice:SECRET@h/",
        ] {
            assert!(!shown_url(url).contains("SECRET"), "{url}");
        }
    }

    #[test]
    fn a_long_url_is_cut_with_its_length() {
        let url = format!("http://h/{}", "a".repeat(70_000));
        let shown = shown_url(&url);
        assert!(shown.len() < 200, "{}", shown.len());
        assert!(shown.ends_with("… (70009 bytes)"), "{shown}");
        // Cut on a character boundary.
        let url = format!("http://h/{}", "é".repeat(300));
        assert!(shown_url(&url).ends_with("(609 bytes)"));
    }
}
