//! Scratch.
fn main() {
    let image = ppm_sim::image::default_image();
    for name in std::env::args().skip(1) {
        let scenario = ppm_sim::builtin::get(&name).unwrap();
        let out = ppm_sim::run_image(&scenario, &ppm_sim::pofx::RunOptions::default(), &image).unwrap();
        println!("{name}: {}", out.report.tally());
        for c in out.report.failures() { println!("  {} {}", c.id, &c.detail[..c.detail.len().min(200)]); }
    }
}
