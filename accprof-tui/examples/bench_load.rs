fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).unwrap_or("/tmp/tui-10m.trace".into()));
    if !path.exists() {
        let t = std::time::Instant::now();
        let n = accprof_tui::synth::write_trace(&path, 10_000_000 / 8).unwrap();
        eprintln!("wrote {n} events in {:?}", t.elapsed());
    }
    let t = std::time::Instant::now();
    let mut store = accprof_tui::state::store::Store::new(false);
    let mut loader = accprof_tui::state::load::Loader::open(&[path], &mut store).unwrap();
    let n = loader.poll(&mut store, &mut |_, _| {}).unwrap();
    eprintln!("loaded {n} events in {:?}", t.elapsed());
}
