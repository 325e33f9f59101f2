//! A URL as the tool shows it: in messages, `scenario.toml`, `summary.md` and `report.html`.
//! The password of `http://user:SECRET@host/` and the values of `?key=SECRET` are credentials
//! as often as not, so they are replaced by `***` wherever a URL is shown (the request itself
//! still carries them); a URL of kilobytes is cut to its start and its length.

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

/// `url` with its userinfo and query values replaced by `***`, not cut: for a file that
/// reads the URL back (a store's `url` in the results' `scenario.toml`).
pub fn without_secrets(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("***{}", &authority[at..]),
        None => authority.to_string(),
    };
    let tail = match tail.find('?') {
        Some(q) => {
            let (path, query) = tail.split_at(q + 1);
            let (query, fragment) = match query.find('#') {
                Some(h) => query.split_at(h),
                None => (query, ""),
            };
            let pairs: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) => format!("{k}=***"),
                    None if pair.is_empty() => String::new(),
                    None => "***".to_string(),
                })
                .collect();
            format!("{path}{}{fragment}", pairs.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
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
        for url in [
            "http://u:SECRET@h/",
            "http://h/?k=SECRET",
            "http://h/p?a=1&k=SECRET#f",
            "https://SECRET@h?x=SECRET",
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
