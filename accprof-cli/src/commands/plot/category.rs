//! The plot's colors for the five kinds of time of the shared taxonomy
//! ([`accprof_timeline::Category`]).

pub use accprof_timeline::Category;
use plotters::style::RGBColor;

/// Colors that stay apart for the common forms of color blindness (Okabe-Ito palette).
pub fn color(c: Category) -> RGBColor {
    match c {
        Category::Kernels => RGBColor(0, 114, 178),
        Category::Data => RGBColor(230, 159, 0),
        Category::Wait => RGBColor(213, 94, 0),
        Category::Init => RGBColor(153, 153, 153),
        Category::Host => RGBColor(0, 158, 115),
    }
}
