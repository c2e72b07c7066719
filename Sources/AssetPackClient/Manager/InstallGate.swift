/// At most one install per pack ID in flight in the process: a second caller for the same pack waits for
/// the first's outcome instead of downloading it again (and having its commit remove the folder the first
/// one's state points to). Installs of different packs run side by side.
actor InstallGate {
    private struct InFlight {
        /// The archive being installed.
        var sha256: String
        var task: Task<Void, any Error>
    }

    private var inFlight: [String: InFlight] = [:]

    /// Installs `pack` through `install` when `needed` says so, unless an install of it is in flight.
    ///
    /// A caller that finds an install of the same archive in flight waits and shares its outcome (success
    /// or error); one that finds another version in flight waits for it, then asks `needed` again.
    /// - Parameters:
    ///   - pack: The pack version to install.
    ///   - needed: Whether the install is still needed (the pack may be local by now); may throw to refuse.
    ///   - install: The download and install.
    /// - Throws: What `needed` or `install` throws, or the shared install's error.
    func run(
        _ pack: AssetPack,
        needed: @Sendable () async throws -> Bool,
        install: @escaping @Sendable () async throws -> Void
    ) async throws {
        while true {
            if let current = inFlight[pack.id] {
                let outcome = await current.task.result
                if current.sha256 == pack.archiveIdentity { return try outcome.get() }
                continue
            }
            guard try await needed() else { return }
            if inFlight[pack.id] != nil { continue }  // another caller started while `needed` ran
            let task = Task { try await install() }
            inFlight[pack.id] = InFlight(sha256: pack.archiveIdentity, task: task)
            let outcome = await withTaskCancellationHandler {
                await task.result
            } onCancel: {
                task.cancel()
            }
            inFlight[pack.id] = nil
            return try outcome.get()
        }
    }

    /// Returns when no install of pack `id` is in flight (whatever its outcome).
    func waitForInstall(of id: String) async {
        while let current = inFlight[id] { _ = await current.task.result }
    }

    /// The IDs of the packs being installed now.
    var installing: Set<String> { Set(inFlight.keys) }
}
