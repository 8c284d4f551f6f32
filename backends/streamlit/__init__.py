"""A Streamlit front end over the HTTP + SSE API: `gui-agent streamlit` (see `launch`).

`app` is the script Streamlit runs; `view` is what it shows, without Streamlit. Importing
this package loads neither Streamlit nor the server.
"""
