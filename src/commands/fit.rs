//! `throttle-sim fit DIR`: the trace read, the rule fitted, the findings and the command that
//! runs the fitted scenario printed.

use crate::cli::FitArgs;
use crate::error::Error;
use crate::exit;
use crate::fit::fit_dir;
use crate::run::print;

pub fn fit(args: &FitArgs) -> Result<i32, Error> {
    let (found, written) =
        fit_dir(&args.dir, args.out.as_deref(), !args.no_expect).map_err(Error::usage)?;
    let code = match found.rule {
        Some(_) => exit::OK,
        None => exit::CANNOT_TELL,
    };
    if args.json {
        let json = serde_json::json!({ "fit": found, "scenario": written });
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json).expect("a fit serializes")
        ));
        return Ok(code);
    }
    if args.quiet {
        return Ok(code);
    }
    let mut out = found.text();
    match written {
        Some(path) => out.push_str(&format!(
            "\nwrote {p}; run it: throttle-sim run {p}\nor ask which client to use: throttle-sim advise --scenario {p} --fleet {}\n",
            found
                .fleet
                .iter()
                .map(|(_, p, t)| format!("{p}x{t}"))
                .collect::<Vec<_>>()
                .join(","),
            p = path.display()
        )),
        None => out.push_str("\nno fit.toml written: the trace cannot tell the rule\n"),
    }
    print(&out);
    Ok(code)
}
