//! fio's `flow=` groups (fio flow.c): clones sharing a `flow_id` split the
//! group's IOs by weight; a clone over its share waits (`flow_sleep`) or
//! retries. The groups' counters, and each member clone's part.

use std::collections::BTreeMap;

/// A `flow_id` group's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FlowGroup {
    /// IOs the group's clones issued (fio's `flow_counter`, starting at 1).
    ios: u64,
    /// The weight of the clones still in the group (`total_weight`).
    weight: u64,
}

/// A clone in a `flow_id` group: its weight and the IOs it issued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FlowSlot {
    id: u32,
    weight: u64,
    count: u64,
    /// Still counted in its group (it leaves when it ends).
    member: bool,
}

/// Every `flow_id` group of the run.
#[derive(Debug, Default)]
pub(super) struct Flows {
    groups: BTreeMap<u32, FlowGroup>,
}

impl Flows {
    /// fio `flow_init_job`: a starting clone of weight `weight` joins
    /// group `id` (a new group's counter starts at 1); None for a clone
    /// without a positive weight.
    pub(super) fn join(&mut self, id: u32, weight: i32) -> Option<FlowSlot> {
        if weight <= 0 {
            return None;
        }
        let weight = weight as u64;
        let g = self
            .groups
            .entry(id)
            .or_insert(FlowGroup { ios: 1, weight: 0 });
        g.weight += weight;
        Some(FlowSlot {
            id,
            weight,
            count: 0,
            member: true,
        })
    }

    /// fio `flow_threshold_exceeded`: the clone is over its share when its
    /// part of the group's IOs exceeds its part of the group's weight.
    pub(super) fn over_share(&self, f: &FlowSlot) -> bool {
        let g = self
            .groups
            .get(&f.id)
            .copied()
            .unwrap_or(FlowGroup { ios: 1, weight: 1 });
        f.member
            && (f.count as f64 / g.ios.max(1) as f64) > (f.weight as f64 / g.weight.max(1) as f64)
    }

    /// An IO of clone `f`: its count and its group's go up.
    pub(super) fn count_issue(&mut self, f: &mut FlowSlot) {
        f.count += 1;
        if let Some(g) = self.groups.get_mut(&f.id) {
            g.ios += 1;
        }
    }

    /// fio `flow_exit_job`: an ended clone takes its IOs and weight out.
    pub(super) fn leave(&mut self, f: &mut FlowSlot) {
        if !f.member {
            return;
        }
        f.member = false;
        if let Some(g) = self.groups.get_mut(&f.id) {
            g.ios = g.ios.saturating_sub(f.count).max(1);
            g.weight = g.weight.saturating_sub(f.weight);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio flow.c's arithmetic: a group's counter starts at 1, a clone is
    /// over its share when its part of the IOs exceeds its part of the
    /// weight, and a clone that left takes its IOs and weight out.
    #[test]
    fn a_clone_over_its_weight_share_waits_until_the_others_catch_up() {
        let mut flows = Flows::default();
        let mut heavy = flows.join(1, 3).expect("weight 3 joins");
        let mut light = flows.join(1, 1).expect("weight 1 joins");
        assert_eq!(flows.join(1, 0), None, "no weight, no flow");
        for _ in 0..3 {
            flows.count_issue(&mut heavy);
        }
        // 3 of the group's 4 IOs against 3 of its 4 weight: not over
        assert!(!flows.over_share(&heavy));
        flows.count_issue(&mut heavy);
        assert!(
            flows.over_share(&heavy),
            "4 of 5 IOs against 3/4 of the weight"
        );
        assert!(!flows.over_share(&light));
        flows.leave(&mut heavy);
        assert!(!flows.over_share(&heavy), "a clone that left is never over");
        flows.count_issue(&mut light);
        // the group is light's alone now: 1 of 2 IOs against all the weight
        assert!(!flows.over_share(&light));
    }
}
