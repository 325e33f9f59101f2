//! `throttle-sim list`: every algorithm and server kind with its parameters.

use crate::cli::ListArgs;
use crate::error::Error;
use crate::exit;
use crate::run::print;

pub fn list(args: &ListArgs) -> Result<i32, Error> {
    if args.json {
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&crate::list::json()).expect("serializes")
        ));
    } else {
        print(&crate::list::text());
    }
    Ok(exit::OK)
}
