#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kapi_fuzz::entry::merge_patch(data);
});
