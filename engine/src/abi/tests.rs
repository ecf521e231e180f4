//! Unit tests of the ABI declarations: bitfield encodings, payload offsets, header constants.

use super::*;

/// The `u32` values at byte offsets 0 and 4 of a 64-bit word of a buffer.
fn halves(word: u64) -> (u32, u32) {
    let [l0, l1, l2, l3, h0, h1, h2, h3] = word.to_ne_bytes();
    (u32::from_ne_bytes([l0, l1, l2, l3]), u32::from_ne_bytes([h0, h1, h2, h3]))
}

#[test]
fn affinitized_relative_frequency_words() {
    let plain = PEP_PROCESSOR_FEEDBACK_COUNTER::new(
        true,
        PROCESSOR_FEEDBACK_TYPE_RELATIVE,
        PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
        false,
        3000,
    );
    assert_eq!(plain._bitfield_1, 0x3);
    assert_eq!(plain.NominalRate, 3000);

    let discounted = PEP_PROCESSOR_FEEDBACK_COUNTER::new(
        true,
        PROCESSOR_FEEDBACK_TYPE_RELATIVE,
        PROCESSOR_FEEDBACK_COUNTER_FREQUENCY,
        true,
        3000,
    );
    assert_eq!(discounted._bitfield_1, 0x83);

    assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(1, 1, 0, 0, 0), 0x3);
    assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(1, 1, 0, 1, 0), 0x83);
    // A performance counter, not affinitized: Counter = 1 at bit 3, Type = 1 at bit 1.
    assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(0, 1, 1, 0, 0), 0xA);
}

#[test]
fn bitfield_accessors_round_trip() {
    let mut counter = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
    counter.set_Affinitized(1);
    counter.set_Type(PROCESSOR_FEEDBACK_TYPE_RELATIVE);
    counter.set_Counter(PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE);
    counter.set_DiscountIdle(1);
    assert_eq!(counter.Affinitized(), 1);
    assert_eq!(counter.Type(), PROCESSOR_FEEDBACK_TYPE_RELATIVE);
    assert_eq!(counter.Counter(), PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE);
    assert_eq!(counter.DiscountIdle(), 1);
    assert_eq!(counter.Reserved(), 0);
    assert_eq!(counter._bitfield_1, 0x8B);

    counter.set_Affinitized(0);
    counter.set_DiscountIdle(0);
    assert_eq!(counter._bitfield_1, 0x0A);
    assert_eq!(counter.Type(), PROCESSOR_FEEDBACK_TYPE_RELATIVE);
    assert_eq!(counter.Counter(), PROCESSOR_FEEDBACK_COUNTER_PERFORMANCE);
}

#[test]
fn bitfield_setters_mask_to_width() {
    let mut counter = PEP_PROCESSOR_FEEDBACK_COUNTER::zeroed();
    counter.set_Type(0xFF);
    assert_eq!(counter.Type(), 0x3);
    assert_eq!(counter._bitfield_1, 0x6);

    counter.set_Counter(0x1F);
    assert_eq!(counter.Counter(), 0xF);
    assert_eq!(counter._bitfield_1, 0x7E);

    counter.set_Affinitized(0xFFFF_FFFE);
    assert_eq!(counter.Affinitized(), 0);
    counter.set_DiscountIdle(3);
    assert_eq!(counter.DiscountIdle(), 1);
    assert_eq!(counter._bitfield_1, 0xFE);

    counter.set_Reserved(u32::MAX);
    assert_eq!(counter.Reserved(), 0x00FF_FFFF);
    assert_eq!(counter._bitfield_1, 0xFFFF_FFFE);
    counter.set_Reserved(0);
    assert_eq!(counter._bitfield_1, 0xFE);

    assert_eq!(PEP_PROCESSOR_FEEDBACK_COUNTER::new_bitfield_1(3, 7, 0x1F, 2, 0x0100_0000), 0x7F);

    let mut flags = PEP_UNMASKED_INTERRUPT_FLAGS__bindgen_ty_1::default();
    flags.set_SecondaryInterrupt(3);
    assert_eq!(flags.SecondaryInterrupt(), 1);
    flags.set_Reserved(u16::MAX);
    assert_eq!(flags.Reserved(), 0x7FFF);
    assert_eq!(flags._bitfield_1, u16::MAX);
    flags.set_SecondaryInterrupt(0);
    assert_eq!(flags._bitfield_1, 0xFFFE);
}

#[test]
fn feedback_read_relative_lands_at_8_and_16() {
    let mut buffer = [0_u64; 3];
    {
        // SAFETY: `buffer` is 24 bytes, 8-aligned and all zero, which is a valid
        // `PEP_PPM_FEEDBACK_READ`; the reference is the only access until it is dropped.
        let read =
            unsafe { &mut *core::ptr::from_mut(&mut buffer).cast::<PEP_PPM_FEEDBACK_READ>() };
        read.CounterIndex = 0x1234_5678;
        read.__bindgen_anon_1.__bindgen_anon_1.NominalCount = 0x1111_2222_3333_4444;
        read.__bindgen_anon_1.__bindgen_anon_1.ActualCount = 0x5555_6666_7777_8888;
    }
    let [first, second, third] = buffer;
    assert_eq!(halves(first).0, 0x1234_5678);
    assert_eq!(second, 0x1111_2222_3333_4444);
    assert_eq!(third, 0x5555_6666_7777_8888);
}

#[test]
fn feedback_read_instantaneous_lands_at_8() {
    let mut buffer = [0_u64; 3];
    {
        // SAFETY: `buffer` is 24 bytes, 8-aligned and all zero, which is a valid
        // `PEP_PPM_FEEDBACK_READ`; the reference is the only access until it is dropped.
        let read =
            unsafe { &mut *core::ptr::from_mut(&mut buffer).cast::<PEP_PPM_FEEDBACK_READ>() };
        read.CounterIndex = 2;
        read.__bindgen_anon_1.InstantaneousValue = 0xDEAD_BEEF_0000_0001;
    }
    let [first, second, third] = buffer;
    assert_eq!(halves(first).0, 2);
    assert_eq!(second, 0xDEAD_BEEF_0000_0001);
    assert_eq!(third, 0);
}

#[test]
fn counter_descriptor_union_lands_at_8() {
    let mut buffer = [0_u64; 4];
    {
        // SAFETY: `buffer` is 32 bytes, 8-aligned and all zero, which is a valid
        // `PHYSICAL_COUNTER_RESOURCE_LIST` (count 0, a NULL overflow handler); the
        // reference is the only access until it is dropped.
        let list = unsafe {
            &mut *core::ptr::from_mut(&mut buffer).cast::<PHYSICAL_COUNTER_RESOURCE_LIST>()
        };
        list.Count = 1;
        let [descriptor] = &mut list.Descriptors;
        descriptor.Type = ResourceTypeRange;
        descriptor.Flags = 0;
        descriptor.u.Range.Begin = 2;
        descriptor.u.Range.End = 3;
    }
    let [count, kind_flags, range, rest] = buffer;
    assert_eq!(halves(count).0, 1);
    assert_eq!(halves(kind_flags), (1, 0));
    assert_eq!(halves(range), (2, 3));
    assert_eq!(rest, 0);

    let mut buffer = [0_u64; 3];
    {
        // SAFETY: `buffer` is 24 bytes, 8-aligned and all zero, which is a valid
        // `PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR`; the reference is the only access until it
        // is dropped.
        let descriptor = unsafe {
            &mut *core::ptr::from_mut(&mut buffer).cast::<PHYSICAL_COUNTER_RESOURCE_DESCRIPTOR>()
        };
        descriptor.Type = ResourceTypeEventBuffer;
        descriptor.u.EventBufferConfiguration = PHYSICAL_COUNTER_EVENT_BUFFER_CONFIGURATION {
            OverflowHandler: None,
            CustomEventBufferEntrySize: 64,
            EventThreshold: 7,
        };
    }
    let [kind_flags, handler, sizes] = buffer;
    assert_eq!(halves(kind_flags), (4, 0));
    assert_eq!(handler, 0);
    assert_eq!(halves(sizes), (64, 7));
}

#[test]
fn anysize_array_pointers() {
    let mut list = PHYSICAL_COUNTER_RESOURCE_LIST::zeroed();
    let base = core::ptr::from_mut(&mut list);
    let first = PHYSICAL_COUNTER_RESOURCE_LIST::descriptors_ptr(base);
    assert_eq!(first.addr().wrapping_sub(base.addr()), 8);

    let mut query = PEP_PPM_QUERY_FEEDBACK_COUNTERS::zeroed();
    let base = core::ptr::from_mut(&mut query);
    let first = PEP_PPM_QUERY_FEEDBACK_COUNTERS::counters_ptr(base);
    assert_eq!(first.addr().wrapping_sub(base.addr()), 4);
}

#[test]
fn constants_match_the_headers() {
    assert_eq!(PEP_INFORMATION::SIZE, 32);
    assert_eq!(PEP_KERNEL_INFORMATION_STRUCT_V3::SIZE, 96);
    assert_eq!(STATUS_INVALID_PARAMETER.cast_unsigned(), 0xC000_000D);
    assert_eq!(STATUS_INVALID_PEP_INFO_VERSION.cast_unsigned(), 0xC000_A005);
    assert_eq!(STATUS_INSUFFICIENT_RESOURCES.cast_unsigned(), 0xC000_009A);
    assert_eq!(STATUS_UNSUCCESSFUL.cast_unsigned(), 0xC000_0001);
    assert_eq!(PepDeviceAccepted, 2);
    assert_eq!(PEP_NOTIFY_PPM_PERF_SET_STATE, 0x2B);
    assert_eq!(PEP_DPM_DEVICE_STARTED, 0x12);
    assert_eq!(PEP_DPM_QUERY_COMPONENT_PERF_CAPABILITIES, PEP_DPM_QUERY_COMPONENT_PERF_CAPABILTIES);
}
