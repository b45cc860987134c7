import CoreMetrics
import Foundation
import Prometheus

/// The server's metrics, in their own Prometheus registry (so several servers in one process,
/// as in tests, keep separate counts), exposed at `/metrics`.
public final class ServerMetrics: Sendable {
    /// The registry `/metrics` renders.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory
    private let applied: CoreMetrics.Counter
    private let rejected: CoreMetrics.Counter
    private let conflicts: CoreMetrics.Counter
    private let pullLatency: CoreMetrics.Timer
    private let pushLatency: CoreMetrics.Timer
    private let liveClients: CoreMetrics.Gauge

    /// Makes the metrics in a new registry.
    package init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        let buckets: [Duration] = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .seconds(2.5),
        ]
        factory.defaultDurationHistogramBuckets = buckets
        self.registry = registry
        self.factory = factory
        applied = Counter(label: "osd_mutations_applied_total", factory: factory)
        rejected = Counter(label: "osd_mutations_rejected_total", factory: factory)
        conflicts = Counter(label: "osd_conflicts_total", factory: factory)
        pullLatency = Timer(label: "osd_pull_duration_seconds", factory: factory)
        pushLatency = Timer(label: "osd_push_duration_seconds", factory: factory)
        liveClients = Gauge(label: "osd_live_clients", factory: factory)
    }

    /// Counts one HTTP request by route and status.
    package func request(route: String, method: String, status: Int) {
        Counter(label: "osd_http_requests_total", dimensions: [("route", route), ("method", method), ("status", "\(status)")], factory: factory)
            .increment()
    }

    /// Counts one push's mutations.
    package func pushed(_ summary: PushSummary) {
        applied.increment(by: summary.applied)
        rejected.increment(by: summary.rejected)
        conflicts.increment(by: summary.conflicts)
    }

    /// Records a pull's duration.
    package func pulled(nanoseconds: Int64) { pullLatency.recordNanoseconds(nanoseconds) }

    /// Records a push's duration.
    package func pushDuration(nanoseconds: Int64) { pushLatency.recordNanoseconds(nanoseconds) }

    /// Records the number of connected live clients.
    package func liveClients(_ count: Int) { liveClients.record(count) }

    /// The metrics in Prometheus' text format.
    public func render() -> String { registry.emitToString() }
}
