import AssetPackFormat
import Synchronization

/// The faults `ba-mock` injects, decided request by request: rules from `--fault` and the control endpoint,
/// counters for `nth` and `times`, and a seeded generator for `p`, so that a run can be replayed.
public final class FaultPlan: Sendable {
    private struct Entry: Sendable {
        var rule: FaultRule
        var matched = 0
        var injected = 0
    }

    private struct State: Sendable {
        var entries: [Entry]
        var random: SplitMix64
    }

    private let state: Mutex<State>
    /// The seed of the generator behind `p=`.
    public let seed: UInt64

    /// Creates a plan.
    public init(rules: [FaultRule] = [], seed: UInt64) {
        self.seed = seed
        self.state = Mutex(State(entries: rules.map { Entry(rule: $0) }, random: SplitMix64(seed: seed)))
    }

    /// The rules in force.
    public var rules: [FaultRule] { state.withLock { $0.entries.map(\.rule) } }

    /// Whether no rule is in force: no request can draw a fault.
    var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

    /// Adds a rule.
    public func add(_ rule: FaultRule) { state.withLock { $0.entries.append(Entry(rule: rule)) } }

    /// Removes the rule at `index` of ``rules``; `nil` when there is none there.
    public func remove(at index: Int) -> FaultRule? {
        state.withLock { state in
            guard state.entries.indices.contains(index) else { return nil }
            return state.entries.remove(at: index).rule
        }
    }

    /// Removes every rule.
    public func clear() { state.withLock { $0.entries.removeAll() } }

    /// The faults to inject into one request: for the manifest (`pack == nil`) or a pack download.
    func draw(pack: String?) -> [FaultRule] {
        state.withLock { state in
            var chosen: [FaultRule] = []
            for index in state.entries.indices {
                let rule = state.entries[index].rule
                guard rule.targetsManifest == (pack == nil) else { continue }
                if let only = rule.pack, let pack, only != pack { continue }
                state.entries[index].matched += 1
                if let nth = rule.nth, state.entries[index].matched != nth { continue }
                if let times = rule.times, state.entries[index].injected >= times { continue }
                if let probability = rule.probability, state.random.nextUnit() >= probability { continue }
                state.entries[index].injected += 1
                chosen.append(rule)
            }
            return chosen
        }
    }
}
