//! `serve`'s live page, `/_dashboard`, loaded in a real headless Chromium (Debian's
//! `chromium`; ignored with the reason where it is missing) while our clients run against
//! `serve --record`: the numbers the page shows after its script ran are `/_stats`'s, its
//! client ids are those `clients.csv` holds, and it lists 1 client and 500 alike. Its data,
//! `/_dashboard.json`, is checked without a browser.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Running, dom_after_scripts, exe, http_get};
use nix::sys::signal::Signal;

/// The text of the element with `id` (`<… id="ID">text<`).
fn text_of(dom: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\">");
    let at = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no #{id} in the page"))
        + marker.len();
    dom[at..].split('<').next().unwrap().to_string()
}

/// A count as the page shows it (`1,234`).
fn number(dom: &str, id: &str) -> u64 {
    let t = text_of(dom, id).replace(',', "");
    t.parse()
        .unwrap_or_else(|_| panic!("#{id} shows {t:?}, not a count"))
}

/// The client ids of the table's rows, and each row's requests.
fn rows(dom: &str) -> Vec<(String, u64)> {
    let body = dom
        .split("<tbody id=\"rows\">")
        .nth(1)
        .and_then(|b| b.split("</tbody>").next())
        .expect("the table");
    body.split("<tr data-id=\"")
        .skip(1)
        .map(|row| {
            let id = row.split('"').next().unwrap().to_string();
            let requests = row
                .split("class=\"requests\">")
                .nth(1)
                .and_then(|r| r.split('<').next())
                .unwrap()
                .replace(',', "")
                .parse()
                .unwrap();
            (id, requests)
        })
        .collect()
}

/// `/_stats` summed over its keys: requests, 2xx, 429, errors.
fn stats_totals(addr: &str) -> [u64; 4] {
    let (status, text) = http_get(addr, "/_stats", "", Duration::from_secs(5));
    assert_eq!(status, 200);
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let mut t = [0; 4];
    for k in v["keys"].as_object().unwrap().values() {
        for (i, f) in ["requests", "ok", "limited", "errors"].iter().enumerate() {
            t[i] += k[f].as_u64().unwrap();
        }
    }
    t
}

fn page_totals(dom: &str) -> [u64; 4] {
    [
        number(dom, "total-requests"),
        number(dom, "total-ok"),
        number(dom, "total-limited"),
        number(dom, "total-errors"),
    ]
}

fn dashboard_json(addr: &str) -> serde_json::Value {
    let (status, text) = http_get(addr, "/_dashboard.json", "", Duration::from_secs(5));
    assert_eq!(status, 200);
    serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap()
}

/// Start `serve --record` on a free port (its status line off: stderr is not a terminal
/// anyway); the child and its address.
fn serve_recording(rec: &Path, extra: &[&str]) -> (Running, String) {
    let mut args = vec!["--record", rec.to_str().unwrap()];
    args.extend_from_slice(extra);
    common::serve(&args)
}

#[test]
#[cfg_attr(
    no_chromium,
    ignore = "needs Debian's chromium on PATH (none was found when this test was built): apt-get install -y chromium, then cargo test --test live dashboard"
)]
fn dashboard_in_chromium_shows_the_numbers_of_stats_and_the_ids_of_clients_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    // 20 per second with 20 to start: 6 threads sending every 100 ms draw some 429s.
    let (mut serve, addr) = serve_recording(&rec, &["--limit", "20", "--period", "1s"]);
    let page = format!("http://{addr}/_dashboard");
    let mut client = Running(
        Command::new(exe())
            .args(["client", "--target", &format!("http://{addr}/")])
            .args(["--algorithm", "fixed", "--set", "clients.*.sleep=100ms"])
            .args(["--processes", "2", "--threads", "3", "--duration", "4s"])
            .args(["--quiet", "--out"])
            .arg(tmp.path().join("client"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // While the clients run: the page lists them and counts.
    std::thread::sleep(Duration::from_millis(1500));
    let during = dom_after_scripts(&page, 1500, 1200);
    let listed = rows(&during);
    assert!(
        listed.iter().any(|(id, _)| id.starts_with("client/p")),
        "{listed:?}"
    );
    assert!(number(&during, "total-requests") > 0);
    assert_eq!(client.wait(Duration::from_secs(60)), Some(0));

    // Once they stopped the numbers hold still: the page's are /_stats's.
    let after = dom_after_scripts(&page, 1500, 1200);
    let stats = stats_totals(&addr);
    assert_eq!(page_totals(&after), stats, "page against /_stats");
    assert!(stats[1] > 0 && stats[2] > 0, "2xx and 429 both: {stats:?}");
    let listed = rows(&after);
    assert_eq!(
        listed.iter().map(|(_, r)| r).sum::<u64>(),
        stats[0],
        "the rows add up to the total"
    );
    assert_eq!(number(&after, "clients-seen"), listed.len() as u64);
    assert!(text_of(&after, "sub").contains("clients.csv"));

    // Stopped, the recording names the same clients.
    serve.signal(Signal::SIGTERM);
    assert_eq!(serve.wait(Duration::from_secs(60)), Some(0));
    let mut csv = csv::Reader::from_path(rec.join("clients.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (g, c, r) = (col("group"), col("client"), col("requests"));
    let mut recorded: Vec<(String, u64)> = csv
        .records()
        .map(|row| {
            let row = row.unwrap();
            (format!("{}/{}", &row[g], &row[c]), row[r].parse().unwrap())
        })
        .collect();
    let mut shown = listed;
    recorded.sort();
    shown.sort();
    assert_eq!(
        shown, recorded,
        "the page's clients and their requests, as recorded"
    );
}

#[test]
#[cfg_attr(
    no_chromium,
    ignore = "needs Debian's chromium on PATH (none was found when this test was built): apt-get install -y chromium, then cargo test --test live dashboard"
)]
fn dashboard_in_chromium_lists_one_client_and_five_hundred() {
    let (_serve, addr) = common::serve(&["--limit", "300", "--period", "10h"]);
    let page = format!("http://{addr}/_dashboard");
    let get = |id: &str| {
        http_get(
            &addr,
            "/",
            &format!("X-Client-Id: {id}\r\n"),
            Duration::from_secs(5),
        )
        .0
    };
    assert_eq!(get("solo/one"), 200);
    let dom = dom_after_scripts(&page, 1500, 1200);
    assert_eq!(rows(&dom), vec![("solo/one".to_string(), 1)]);
    assert_eq!(page_totals(&dom), [1, 1, 0, 0]);
    assert_eq!(text_of(&dom, "remaining"), "299");
    // The rule served, and one word for the clock at time scale 1.
    assert_eq!(
        text_of(&dom, "rule"),
        "Serving gcra: 300 per 10h, 300 to start (0.008 per second sustained)"
    );
    assert!(text_of(&dom, "sub").contains("rates per second"));

    for i in 1..500 {
        get(&format!("many/c{i:03}"));
    }
    let dom = dom_after_scripts(&page, 2500, 1200);
    let listed = rows(&dom);
    assert_eq!(listed.len(), 500);
    assert_eq!(page_totals(&dom), stats_totals(&addr));
    assert_eq!(page_totals(&dom), [500, 300, 200, 0]);
    assert!(text_of(&dom, "shown").starts_with("500 clients shown"));
}

#[test]
fn dashboard_json_counts_each_client_and_the_page_is_self_contained() {
    let (_serve, addr) = common::serve(&["--limit", "3", "--period", "1h"]);
    for _ in 0..4 {
        http_get(&addr, "/", "X-Client-Id: web/a\r\n", Duration::from_secs(5));
    }
    http_get(
        &addr,
        "/",
        "Authorization: Bearer t\r\n",
        Duration::from_secs(5),
    );
    let v = dashboard_json(&addr);
    // The rule, its sustained rate (3 an hour) and the bucket the remaining axis goes up to.
    assert_eq!(v["rule"], "gcra: 3 per 1h, 3 to start");
    assert!((v["limit_per_s"].as_f64().unwrap() - 3.0 / 3600.0).abs() < 1e-12);
    assert_eq!(v["bucket"], 3);
    assert_eq!(v["clients_seen"], 2);
    assert_eq!(v["totals"]["requests"], 5);
    let a = &v["clients"][0];
    assert_eq!(
        (a["id"].as_str(), a["ok"].as_u64()),
        (Some("web/a"), Some(3))
    );
    assert_eq!(a["limited"], 1);
    assert_eq!(a["remaining"], 0);
    assert_eq!(a["remaining_series"].as_array().unwrap().len(), 60);
    // The key's client is named by its fingerprint, never the token.
    let b = v["clients"][1]["id"].as_str().unwrap();
    assert!(
        b.starts_with("clients/key:") && !b.contains("bearer"),
        "{b}"
    );
    // Neither page nor data counts as a request, and the page fetches nothing from elsewhere.
    let (status, page) = http_get(&addr, "/_dashboard", "", Duration::from_secs(5));
    assert_eq!(status, 200);
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
    assert_eq!(dashboard_json(&addr)["totals"]["requests"], 5);
    assert_eq!(stats_totals(&addr)[0], 5);
}
