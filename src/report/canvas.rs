//! Where a chart is drawn: the same drawing code renders to SVG (for the report and the web)
//! and to PNG (for anything that shows pictures), with text in the embedded DejaVu Sans so a
//! PNG reads the same on a machine without a single font installed.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

/// DejaVu Sans (Bitstream Vera licence, see assets/fonts/LICENSE-DejaVu.txt), compiled in.
static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Every chart is this size in pixels, SVG and PNG alike.
pub const WIDTH: u32 = 1000;
pub const HEIGHT: u32 = 560;

/// Register the embedded font as plotters' `sans-serif`, once per process. Text layout (and so
/// every chart) needs it, the SVG too: the axis areas are sized from the glyph metrics.
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font("sans-serif", FontStyle::Normal, DEJAVU_SANS).is_err() {
            // The bytes are compiled in and tested, so this cannot happen on a correct build.
            panic!("the embedded DejaVu Sans font failed to load");
        }
    });
}

/// A chart that can draw itself on any plotters backend.
pub trait Chart {
    /// The file stem under `charts/` (`sleep`, `ratio_429`, …).
    fn stem(&self) -> &str;
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), DrawError>;
}

/// What the chart library or the PNG encoder said when it failed. Their errors are generic
/// over the drawing backend, so only their text is kept.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(String);

/// One chart in both formats.
pub struct Rendered {
    pub svg: String,
    pub png: Vec<u8>,
}

/// Draw `chart` as SVG text and as a PNG file's bytes.
pub fn render(chart: &impl Chart) -> Result<Rendered, DrawError> {
    register_font();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&area)?;
        area.present().map_err(err)?;
    }
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let area = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&area)?;
        area.present().map_err(err)?;
    }
    Ok(Rendered {
        svg,
        png: encode_png(&rgb, WIDTH, HEIGHT)?,
    })
}

/// RGB8 pixels to PNG bytes (the png crate's output is deterministic, so charts are too).
pub fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, DrawError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, width, height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc.write_header().map_err(err)?;
        w.write_image_data(rgb).map_err(err)?;
        w.finish().map_err(err)?;
    }
    Ok(out)
}

/// For `map_err`: any plotters or PNG error as a [`DrawError`].
pub fn err<E: std::fmt::Display>(e: E) -> DrawError {
    DrawError(e.to_string())
}

/// Ten colours that stay apart from each other (Tableau 10), assigned in order.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}
