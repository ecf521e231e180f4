//! Scratch.
fn main() {
    for (name, scenario) in ppm_sim::builtin::all() {
        if !ppm_sim::image::runs_on_image(&scenario) { continue; }
        let image = ppm_sim::image::image_for(&scenario, None);
        let start = std::time::Instant::now();
        let out = ppm_sim::run_image(&scenario, &ppm_sim::pofx::RunOptions::default(), &image).unwrap();
        println!("{name:28} {:6.2} s  {}", start.elapsed().as_secs_f64(), out.report.tally());
    }
}
