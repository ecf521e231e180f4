//! The per-thread engine instance: [`ThreadHost`], [`enter`] and [`leave`].

use std::any::TypeId;
use std::cell::Cell;
use std::marker::PhantomData;

use ppm_engine::{Pep, PepHost, Platform};

/// The engine instance entered on a thread, type-erased: the `Pep` and its platform's type;
/// `(NULL, Nothing's)` when none is. The type is held as a `'static` reference to a constant
/// `TypeId`, so that the usual check is one address comparison (see [`is_type_of`]).
type Installed = (*const (), &'static TypeId);

/// `P`'s `TypeId`, as a `'static` constant.
const fn type_of<P: 'static>() -> &'static TypeId {
    const { &TypeId::of::<P>() }
}

/// Whether `installed` is `P`'s `TypeId`: the same constant (one comparison, the usual case),
/// or, should the compiler have emitted `P`'s constant more than once, an equal one. Never
/// true for another type (distinct `TypeId`s are distinct constants, at distinct addresses).
#[inline]
fn is_type_of<P: 'static>(installed: &'static TypeId) -> bool {
    std::ptr::eq(installed, type_of::<P>()) || *installed == TypeId::of::<P>()
}

/// The "platform" of no instance: a private type that implements no `Platform`.
struct Nothing;

/// What a thread holds when no instance is entered.
const NOTHING: Installed = (std::ptr::null(), type_of::<Nothing>());

thread_local! {
    static INSTALLED: Cell<Installed> = const { Cell::new(NOTHING) };
}

/// The host of every emulated caller: the callbacks serve the `Pep<P>` [`enter`]ed on the
/// calling thread, and refuse everything when none is (or one of another platform is).
#[derive(Debug)]
pub struct ThreadHost<P>(PhantomData<fn() -> P>);

impl<P: Platform> PepHost for ThreadHost<P> {
    type Platform = P;

    #[inline]
    fn instance() -> Option<&'static Pep<P>> {
        let (pep, platform) = INSTALLED.with(Cell::get);
        if !is_type_of::<P>(platform) {
            return None;
        }
        // SAFETY: the type is `P`'s, not `Nothing`'s (which implements no `Platform`), so
        // `enter` installed `pep` from a `&Pep<P>`: non-NULL (telling the optimiser so saves
        // the callback a NULL test on every notification).
        unsafe { std::hint::assert_unchecked(!pep.is_null()) };
        // SAFETY: as above, `pep` came from a `&Pep<P>` borrowed by the `Entered` guard alive
        // on this thread (dropping it uninstalls it); the engine shares the `Pep` by `&` only.
        // The `'static` is wider than the truth: the engine uses the reference only for the
        // callback it was obtained in, which runs within the guard's life.
        Some(unsafe { &*pep.cast::<Pep<P>>() })
    }
}

/// While alive, the callbacks called on this thread serve the entered instance (or none, for
/// [`leave`]). Dropping it restores the previous one: guards nest.
#[derive(Debug)]
#[must_use = "the instance is entered only while the guard lives"]
pub struct Entered<'pep> {
    previous: Installed,
    _pep: PhantomData<&'pep ()>,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        INSTALLED.with(|installed| installed.set(self.previous));
    }
}

/// Makes `pep` the instance [`ThreadHost<P>`] serves on the calling thread, for the guard's life.
pub fn enter<P: Platform>(pep: &Pep<P>) -> Entered<'_> {
    let installed = (std::ptr::from_ref(pep).cast::<()>(), type_of::<P>());
    Entered { previous: INSTALLED.with(|cell| cell.replace(installed)), _pep: PhantomData }
}

/// No instance on the calling thread for the guard's life: every callback refuses.
pub fn leave<'pep>() -> Entered<'pep> {
    Entered { previous: INSTALLED.with(|cell| cell.replace(NOTHING)), _pep: PhantomData }
}

/// Whether an instance is entered on the calling thread.
#[must_use]
pub fn is_entered() -> bool {
    !INSTALLED.with(Cell::get).0.is_null()
}

/// Makes `pep` the instance [`ThreadHost<P>`] serves on the calling thread from now on (until
/// another [`enter`] or `install`): a leaked engine needs no guard.
pub fn install<P: Platform>(pep: &'static Pep<P>) {
    std::mem::forget(enter(pep));
}
