
€ =

track_eventcom.android.chromecom.google.chrome.canary