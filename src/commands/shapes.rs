//! `throttle-sim shapes`: draw API shapes and fleets and write them as one `[[axes]]` scenario.

use std::fs;

use crate::cli::ShapesArgs;
use crate::error::Error;
use crate::exit;
use crate::rng::fresh_seed;
use crate::run::print;

pub fn shapes(args: &ShapesArgs) -> Result<i32, Error> {
    let seed = args.seed.unwrap_or_else(fresh_seed);
    let text = crate::shapes::file_text(args.count as usize, seed);
    match &args.out {
        None => print(&text),
        Some(path) => {
            fs::write(path, &text).map_err(Error::io(path))?;
            print(&format!(
                "wrote {p}: {n} shapes of seed {seed}; judge fair-share on them: throttle-sim \
                 check {p}\n",
                p = path.display(),
                n = args.count
            ));
        }
    }
    Ok(exit::OK)
}
