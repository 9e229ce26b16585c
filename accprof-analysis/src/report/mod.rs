//! Rendering a profile as text, JSON or CSV.
