//! The export's slices are the shared compact events ([`accprof_timeline::CompactEvent`]): the
//! part of an event a timeline view needs, with the track and lane the export gives it.

pub use accprof_timeline::compact::{NONE_I32, NONE_U32};
pub use accprof_timeline::CompactEvent as Slice;
