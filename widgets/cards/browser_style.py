"""The card browser's stylesheet: the list above (or, wide, beside) the preview, the header,
the filter box, the flash line and the key hints."""

BROWSER_CSS = """
    CardBrowser {
        layout: vertical;
        #cb-header {
            height: 1;
            padding: 0 1;
            background: $panel;
            text-style: bold;
        }
        #cb-note {
            height: auto;
            padding: 0 1;
            color: $text-warning;
        }
        #cb-filter {
            margin: 0 1;
        }
        #cb-main {
            height: 1fr;
            layout: vertical;
        }
        #cb-preview {
            width: 1fr;
            height: 1fr;
            border-top: hkey $secondary;
            scrollbar-size-vertical: 1;
        }
        &.-wide #cb-main {
            layout: horizontal;
        }
        &.-wide #cb-preview {
            border-top: none;
            border-left: vkey $secondary;
        }
        #cb-meta {
            width: 1fr;
            height: auto;
            padding: 0 1;
        }
        #cb-body {
            margin: 1 0 0 0;
        }
        #cb-raw {
            width: 1fr;
            height: auto;
            margin: 1 0 0 0;
            padding: 0 1;
        }
        #cb-flash {
            height: auto;
            padding: 0 1;
            color: $text-success;
            &.-error {
                color: $text-error;
            }
        }
        #cb-keys {
            height: auto;
            padding: 0 1;
            color: $foreground-muted;
            background: $panel;
        }
        .-hidden {
            display: none;
        }
    }
"""
