/// `body` of each element, at most `jobs` at once (1 when fewer), the results in order: the one bound on
/// requests in flight of `publish`.
/// - Throws: The first error of `body`; the others still running are cancelled.
func concurrently<Element: Sendable, Result: Sendable>(
    _ elements: [Element],
    jobs: Int,
    _ body: @escaping @Sendable (Element) async throws -> Result
) async throws -> [Result] {
    try await withThrowingTaskGroup(of: (Int, Result).self) { group in
        var results = [Result?](repeating: nil, count: elements.count)
        var next = 0
        for _ in 0..<min(max(jobs, 1), elements.count) {
            let index = next
            group.addTask { (index, try await body(elements[index])) }
            next += 1
        }
        while let (index, result) = try await group.next() {
            results[index] = result
            if next < elements.count {
                let index = next
                group.addTask { (index, try await body(elements[index])) }
                next += 1
            }
        }
        return results.compactMap { $0 }
    }
}
