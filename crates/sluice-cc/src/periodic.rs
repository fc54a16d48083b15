//! A timer that stands for a clock ticking at a fixed period, as the hardware timers of NIC-based
//! algorithms do (DCQCN's rate-increase timer and its decrease checks, ToCC's window increases).
//!
//! A datapath fires a timer at its deadline or later: the simulator on time, a user-space host loop when
//! it next wakes, tens of microseconds late under load. A NIC's clock would have ticked once per period
//! meanwhile, so an algorithm that updates once per firing would update less often than its paper
//! says. [`Periodic::fire`] tells the algorithm how many periods have elapsed, and
//! re-arms on the period's grid, so the algorithm can apply them all. When a datapath fires on time the
//! count is always 1 and the next deadline is one period on.

use sluice_core::Time;

use crate::api::{Ctx, TimerId};
use crate::receiver::RxCtx;

/// What a [`Periodic`] needs of an event's context: its time, and arming a timer. Senders' ([`Ctx`])
/// and receivers' ([`RxCtx`]) contexts have both.
pub trait TimerCtx {
    /// The time of the event being handled.
    fn now(&self) -> Time;
    /// Arms timer `id` at `at`.
    fn set_timer(&mut self, id: TimerId, at: Time);
}

impl TimerCtx for Ctx {
    fn now(&self) -> Time {
        Ctx::now(self)
    }

    fn set_timer(&mut self, id: TimerId, at: Time) {
        Ctx::set_timer(self, id, at);
    }
}

impl TimerCtx for RxCtx {
    fn now(&self) -> Time {
        RxCtx::now(self)
    }

    fn set_timer(&mut self, id: TimerId, at: Time) {
        RxCtx::set_timer(self, id, at);
    }
}

/// The deadline of one periodic timer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Periodic {
    due: Time,
}

impl Periodic {
    /// Arms timer `id` to fire first at `at`, starting the period grid there.
    pub fn arm(&mut self, ctx: &mut impl TimerCtx, id: TimerId, at: Time) {
        self.due = at;
        ctx.set_timer(id, at);
    }

    /// Arms timer `id` at the first boundary of the grid (the deadlines so far, `interval` apart) that
    /// lies after now: a timer that ticks only for the periods where something happened, on the grid a
    /// ticking one would keep.
    pub fn arm_after(&mut self, ctx: &mut impl TimerCtx, id: TimerId, interval: Time) {
        let now = ctx.now();
        if self.due <= now {
            let interval = interval.max(1);
            let periods = (now - self.due) / interval + 1;
            self.due = self.due.saturating_add(periods.saturating_mul(interval));
        }
        ctx.set_timer(id, self.due);
    }

    /// Timer `id` fired: returns how many periods of `interval` ended by now (at least 1: the one that
    /// was due) and re-arms the timer at the first period boundary after now.
    pub fn fire(&mut self, ctx: &mut impl TimerCtx, id: TimerId, interval: Time) -> u64 {
        let periods = self.elapse(ctx.now(), interval);
        self.rearm(ctx, id);
        periods
    }

    /// The timer fired at `now`: returns how many periods of `interval` ended by then (at least 1) and
    /// moves the deadline to the first boundary after `now`, without arming it ([`Periodic::rearm`]).
    pub fn elapse(&mut self, now: Time, interval: Time) -> u64 {
        let late = now.saturating_sub(self.due);
        let periods = 1 + late / interval.max(1);
        self.due = self.due.saturating_add(periods.saturating_mul(interval.max(1)));
        periods
    }

    /// Arms timer `id` at the current deadline.
    pub fn rearm(&self, ctx: &mut impl TimerCtx, id: TimerId) {
        ctx.set_timer(id, self.due);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: TimerId = TimerId(0);

    fn fire_at(timer: &mut Periodic, now: Time, interval: Time) -> (u64, Option<Time>) {
        let mut ctx = Ctx::new(now);
        let periods = timer.fire(&mut ctx, ID, interval);
        (periods, ctx.decisions().set_timers[ID.0 as usize])
    }

    #[test]
    fn a_timer_fired_on_time_counts_one_period_and_rearms_one_period_on() {
        let mut timer = Periodic::default();
        timer.arm(&mut Ctx::new(0), ID, 100);
        assert_eq!(fire_at(&mut timer, 100, 10), (1, Some(110)));
        assert_eq!(fire_at(&mut timer, 110, 10), (1, Some(120)));
    }

    #[test]
    fn arming_after_now_picks_the_next_boundary_of_the_grid() {
        let mut timer = Periodic::default();
        timer.arm(&mut Ctx::new(0), ID, 100);
        let arm_at = |timer: &mut Periodic, now: Time| {
            let mut ctx = Ctx::new(now);
            timer.arm_after(&mut ctx, ID, 10);
            ctx.decisions().set_timers[ID.0 as usize]
        };
        // Before the deadline: the deadline itself.
        assert_eq!(arm_at(&mut timer, 95), Some(100));
        // On a boundary: the next one, strictly after now.
        assert_eq!(arm_at(&mut timer, 100), Some(110));
        assert_eq!(arm_at(&mut timer, 137), Some(140));
        assert_eq!(arm_at(&mut timer, 160), Some(170));
    }

    #[test]
    fn a_late_timer_counts_every_period_that_ended_and_stays_on_the_grid() {
        let mut timer = Periodic::default();
        timer.arm(&mut Ctx::new(0), ID, 100);
        // Due at 100; periods ended at 100, 110, 120 and 130 by 135.
        assert_eq!(fire_at(&mut timer, 135, 10), (4, Some(140)));
        // Just before the next boundary: still one period.
        assert_eq!(fire_at(&mut timer, 149, 10), (1, Some(150)));
        // Exactly on a later boundary: that period counts too.
        assert_eq!(fire_at(&mut timer, 170, 10), (3, Some(180)));
    }
}
