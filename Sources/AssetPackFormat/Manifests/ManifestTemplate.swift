/// The commented packaging-manifest template `ba-mock template` prints, with Apple's keys.
public enum ManifestTemplate {
    /// The template text: JSON with `//` comments, which ``PackagingManifest/parse(_:file:)`` accepts as-is.
    public static let text = """
        // A packaging manifest describes one asset pack. Edit the values below, keep the keys.
        // Paths are relative to the asset folder: the folder that holds this file (ba-mock serve/export),
        // or --root (ba-mock package), as ba-package resolves them against the folder it runs in.
        {
            // The identifier your app uses in code, e.g. AssetPackManager.shared.assetPack(withID: "Tutorial").
            // Use letters, digits and hyphens: App Store Connect rejects '_' and '.'.
            "assetPackID": "[Asset-Pack ID]",

            // Exactly one of "essential", "prefetch" and "onDemand":
            // - "essential" downloads during installation and blocks the user from opening the app until
            //   the installation finishes;
            // - "prefetch" starts during installation and could continue after the installation finishes;
            // - "onDemand" never automatically downloads; the app asks for it.
            // "essential" and "prefetch" need "installationEventTypes": "firstInstallation" applies the
            // policy when a user newly installs your app, "subsequentUpdate" when a user updates it.
            // For an on-demand pack write: "downloadPolicy": { "onDemand": {} }
            "downloadPolicy": {
                "prefetch": {
                    "installationEventTypes": [
                        "firstInstallation",
                        "subsequentUpdate"
                    ]
                }
            },

            // You can add as many file and/or directory selectors as you want. A directory selector
            // includes all nested folders too. Xcode 27 adds (schema from third-party reports):
            //   { "filePattern": "Levels/**/*.json" }         every matching file (*, ?, [...], ** across folders)
            //   { "fileExclusion": "**/*.psd" }              removes matches from what the others chose
            //   { "fileSource": "Art/logo@2x.png", "fileDestination": "UI/logo.png" }
            //   { "directorySource": "Voice/fr", "directoryDestination": "Voice" }
            // Also at the top level: "sourceRoot": "../Content" (where selector paths start, relative to
            // this file's folder), "language": "fr" (a localized pack, OS 27) and "userInfo": { ... } (copied
            // into the download manifest).
            "fileSelectors": [
                {
                    "file": "[Path to File]"
                },
                {
                    "directory": "[Path to Directory]"
                }
            ],

            // The platforms this pack is for: "iOS", "macOS", "tvOS", "visionOS" (iOS covers iPadOS).
            "platforms": [
                "iOS",
                "macOS"
            ]
        }

        """
}
