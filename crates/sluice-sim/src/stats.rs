//! Run-wide counters: what the engine, the network and the transports did in a run.

/// Run-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events handled.
    pub events: u64,
    /// Packets put on a link (data and control, every hop).
    pub packet_hops: u64,
    /// Payload bytes hosts transmitted (retransmissions included).
    pub bytes_sent: u64,
    /// Payload bytes that reached their destination host.
    pub bytes_delivered: u64,
    /// Payload bytes dropped in switches.
    pub bytes_dropped: u64,
    /// Packets dropped in switches (data and control).
    pub drops: u64,
    /// Data packets dropped in switches (the rest of `drops` are control packets: ACKs, tokens, ...).
    pub data_drops: u64,
    /// Payload bytes sent again.
    pub retransmitted_bytes: u64,
    /// PFC pause frames sent.
    pub pfc_pauses: u64,
    /// ECN marks applied.
    pub ecn_marks: u64,
    /// CNPs sent.
    pub cnps: u64,
    /// Notifications switches sent to senders: Bolt's sub-RTT control packets and switch signals' feedback
    /// packets.
    pub notifications: u64,
    /// Retransmission timeouts that fired.
    pub timeouts: u64,
    /// Flows that delivered all their bytes.
    pub flows_finished: u64,
    /// Closed-loop slots that stopped early because the flow ids had no room for their next flow.
    pub loop_slots_out_of_ids: u64,
    /// Receiver-driven counters (all zero for sender-driven algorithms).
    pub rd: RdCounters,
    /// Payload bytes receivers' processing queues finished (endpoint model).
    pub endpoint_processed_bytes: u64,
    /// Data packets dropped at full processing queues (endpoint model).
    pub endpoint_drops: u64,
    /// Data packets dropped at full NIC receive buffers (host interconnect model).
    pub host_drops: u64,
    /// Data packets hosts marked ECN CE on receive (host policies' network response).
    pub host_ecn_marks: u64,
    /// Data packets written into host memory (host interconnect model).
    pub host_dma_packets: u64,
    /// Sum over those packets of the time from leaving the sender to reaching host memory, ps.
    pub host_dma_delay_sum: u64,
}

impl Counters {
    /// Adds `other`'s counts to these (the parts of a partitioned run).
    pub fn add(&mut self, other: &Counters) {
        let Counters {
            events,
            packet_hops,
            bytes_sent,
            bytes_delivered,
            bytes_dropped,
            drops,
            data_drops,
            retransmitted_bytes,
            pfc_pauses,
            ecn_marks,
            cnps,
            notifications,
            timeouts,
            flows_finished,
            loop_slots_out_of_ids,
            rd,
            endpoint_processed_bytes,
            endpoint_drops,
            host_drops,
            host_ecn_marks,
            host_dma_packets,
            host_dma_delay_sum,
        } = other;
        self.events += events;
        self.packet_hops += packet_hops;
        self.bytes_sent += bytes_sent;
        self.bytes_delivered += bytes_delivered;
        self.bytes_dropped += bytes_dropped;
        self.drops += drops;
        self.data_drops += data_drops;
        self.retransmitted_bytes += retransmitted_bytes;
        self.pfc_pauses += pfc_pauses;
        self.ecn_marks += ecn_marks;
        self.cnps += cnps;
        self.notifications += notifications;
        self.timeouts += timeouts;
        self.flows_finished += flows_finished;
        self.loop_slots_out_of_ids += loop_slots_out_of_ids;
        self.rd.add(rd);
        self.endpoint_processed_bytes += endpoint_processed_bytes;
        self.endpoint_drops += endpoint_drops;
        self.host_drops += host_drops;
        self.host_ecn_marks += host_ecn_marks;
        self.host_dma_packets += host_dma_packets;
        self.host_dma_delay_sum += host_dma_delay_sum;
    }
}

impl RdCounters {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &RdCounters) {
        let RdCounters {
            requests,
            tokens_issued,
            tokens_dropped,
            tokens_marked,
            tokens_wasted,
            tokens_stale,
            tokens_used,
            trimmed,
            unscheduled_dropped,
            unscheduled_bytes,
            scheduled_bytes,
            probes,
            rx_timeouts,
            trimmed_queued,
            bounced,
            header_drops,
            early_stops,
            tx_timeouts,
        } = other;
        self.requests += requests;
        self.tokens_issued += tokens_issued;
        self.tokens_dropped += tokens_dropped;
        self.tokens_marked += tokens_marked;
        self.tokens_wasted += tokens_wasted;
        self.tokens_stale += tokens_stale;
        self.tokens_used += tokens_used;
        self.trimmed += trimmed;
        self.unscheduled_dropped += unscheduled_dropped;
        self.unscheduled_bytes += unscheduled_bytes;
        self.scheduled_bytes += scheduled_bytes;
        self.probes += probes;
        self.rx_timeouts += rx_timeouts;
        self.trimmed_queued += trimmed_queued;
        self.bounced += bounced;
        self.header_drops += header_drops;
        self.early_stops += early_stops;
        self.tx_timeouts += tx_timeouts;
    }
}

/// What the receiver-driven transport did in a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RdCounters {
    /// Requests to send.
    pub requests: u64,
    /// Tokens receivers sent.
    pub tokens_issued: u64,
    /// Tokens switch token limiters dropped (queue full).
    pub tokens_dropped: u64,
    /// Tokens ECN-marked in switch token queues.
    pub tokens_marked: u64,
    /// Tokens that reached a sender with nothing left to send.
    pub tokens_wasted: u64,
    /// Tokens senders discarded as stale (held too long, or beyond one BDP).
    pub tokens_stale: u64,
    /// Tokens senders spent on data.
    pub tokens_used: u64,
    /// Data packets switches trimmed to headers.
    pub trimmed: u64,
    /// Unscheduled packets switches dropped (Aeolus selective dropping).
    pub unscheduled_dropped: u64,
    /// Payload bytes sent unscheduled.
    pub unscheduled_bytes: u64,
    /// Payload bytes sent against tokens.
    pub scheduled_bytes: u64,
    /// Aeolus probes sent.
    pub probes: u64,
    /// Receiver loss timeouts that fired.
    pub rx_timeouts: u64,
    /// Data packets trimmed in the queue (the last queued packet rather than the arriving one, NDP).
    pub trimmed_queued: u64,
    /// Trimmed headers that found a header queue full and went back to their senders (NDP).
    pub bounced: u64,
    /// Packets dropped at full header queues of trimming switches (control packets, headers already
    /// returned once).
    pub header_drops: u64,
    /// Early CREDIT_STOPs senders sent.
    pub early_stops: u64,
    /// Sender retransmission timeouts that fired (a request to send sent again).
    pub tx_timeouts: u64,
}

/// What a fault did over a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Packets dropped.
    pub dropped: u64,
    /// Packets marked CE.
    pub marked: u64,
}

impl FaultStats {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &FaultStats) {
        self.dropped += other.dropped;
        self.marked += other.marked;
    }
}
