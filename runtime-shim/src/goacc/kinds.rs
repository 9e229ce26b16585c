//! The map kinds of GCC's OpenACC lowering (the low byte of each `kinds[i]`; the high byte is
//! the alignment's log2), with the numbers of GCC 12's include/gomp-constants.h.

/// A map kind as GCC passes it to the GOACC_* entry points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapKind(pub u8);

impl MapKind {
    pub const ALLOC: MapKind = MapKind(0);
    pub const TO: MapKind = MapKind(1);
    pub const FROM: MapKind = MapKind(2);
    pub const TOFROM: MapKind = MapKind(3);
    pub const POINTER: MapKind = MapKind(4);
    pub const TO_PSET: MapKind = MapKind(5);
    pub const FORCE_PRESENT: MapKind = MapKind(6);
    pub const DELETE: MapKind = MapKind(7);
    pub const FORCE_DEVICEPTR: MapKind = MapKind(8);
    pub const DEVICE_RESIDENT: MapKind = MapKind(9);
    pub const LINK: MapKind = MapKind(10);
    pub const IF_PRESENT: MapKind = MapKind(11);
    pub const FIRSTPRIVATE: MapKind = MapKind(12);
    pub const FIRSTPRIVATE_INT: MapKind = MapKind(13);
    pub const USE_DEVICE_PTR: MapKind = MapKind(14);
    pub const ZERO_LEN_ARRAY_SECTION: MapKind = MapKind(15);
    pub const USE_DEVICE_PTR_IF_PRESENT: MapKind = MapKind(16);
    pub const ALWAYS_TO: MapKind = MapKind(17);
    pub const ALWAYS_FROM: MapKind = MapKind(18);
    pub const ALWAYS_TOFROM: MapKind = MapKind(19);
    pub const RELEASE: MapKind = MapKind(23);
    pub const STRUCT: MapKind = MapKind(28);
    pub const ALWAYS_POINTER: MapKind = MapKind(29);
    pub const DELETE_ZERO_LEN_ARRAY_SECTION: MapKind = MapKind(31);
    pub const ATTACH: MapKind = MapKind(80);
    pub const DETACH: MapKind = MapKind(81);
    pub const FORCE_ALLOC: MapKind = MapKind(128);
    pub const FORCE_TO: MapKind = MapKind(129);
    pub const FORCE_FROM: MapKind = MapKind(130);
    pub const FORCE_TOFROM: MapKind = MapKind(131);
    pub const FORCE_DETACH: MapKind = MapKind(209);

    /// The kind of `kinds[i]`.
    pub fn of(raw: u16) -> MapKind {
        MapKind((raw & 0xff) as u8)
    }

    /// GCC's name for the kind, for the line that refuses it.
    pub fn name(self) -> &'static str {
        match self.0 {
            0 => "GOMP_MAP_ALLOC",
            1 => "GOMP_MAP_TO",
            2 => "GOMP_MAP_FROM",
            3 => "GOMP_MAP_TOFROM",
            4 => "GOMP_MAP_POINTER",
            5 => "GOMP_MAP_TO_PSET",
            6 => "GOMP_MAP_FORCE_PRESENT",
            7 => "GOMP_MAP_DELETE",
            8 => "GOMP_MAP_FORCE_DEVICEPTR",
            9 => "GOMP_MAP_DEVICE_RESIDENT",
            10 => "GOMP_MAP_LINK",
            11 => "GOMP_MAP_IF_PRESENT",
            12 => "GOMP_MAP_FIRSTPRIVATE",
            13 => "GOMP_MAP_FIRSTPRIVATE_INT",
            14 => "GOMP_MAP_USE_DEVICE_PTR",
            15 => "GOMP_MAP_ZERO_LEN_ARRAY_SECTION",
            16 => "GOMP_MAP_USE_DEVICE_PTR_IF_PRESENT",
            17 => "GOMP_MAP_ALWAYS_TO",
            18 => "GOMP_MAP_ALWAYS_FROM",
            19 => "GOMP_MAP_ALWAYS_TOFROM",
            23 => "GOMP_MAP_RELEASE",
            28 => "GOMP_MAP_STRUCT",
            29 => "GOMP_MAP_ALWAYS_POINTER",
            31 => "GOMP_MAP_DELETE_ZERO_LEN_ARRAY_SECTION",
            80 => "GOMP_MAP_ATTACH",
            81 => "GOMP_MAP_DETACH",
            128 => "GOMP_MAP_FORCE_ALLOC",
            129 => "GOMP_MAP_FORCE_TO",
            130 => "GOMP_MAP_FORCE_FROM",
            131 => "GOMP_MAP_FORCE_TOFROM",
            209 => "GOMP_MAP_FORCE_DETACH",
            _ => "an unknown map kind",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alignment_byte_is_not_part_of_the_kind() {
        // 0x303: tofrom of an 8-byte-aligned scalar, as GCC 12 emits for a reduction variable.
        assert_eq!(MapKind::of(0x303), MapKind::TOFROM);
        assert_eq!(MapKind::of(0x283), MapKind::FORCE_TOFROM);
        assert_eq!(MapKind::of(0x283).name(), "GOMP_MAP_FORCE_TOFROM");
    }
}
