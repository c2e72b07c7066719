extension Duration {
    /// The duration in seconds, as a number to print or to compute a rate with (`1.5` for 1.5 s).
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
