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

    /// Adds a rule.
    public func add(_ rule: FaultRule) { state.withLock { $0.entries.append(Entry(rule: rule)) } }

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

/// A small, fast, seedable generator (SplitMix64): the same seed gives the same faults.
struct SplitMix64: Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
